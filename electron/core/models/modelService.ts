import fs from "node:fs";
import os from "node:os";
import { loadCatalog, loadEmbeddingCatalog, recommendModel, serveFit, serveMemoryOf, type CatalogEntry, type Recommendation } from "../../../models/catalog.js";
import { DownloadError, type DownloadProgress } from "../../../models/downloader.js";
import { resolveModelSource } from "../../../models/hfSource.js";
import { pullModel } from "../../../models/pull.js";
import { describeGguf, isEmbeddingModel, modelDisplayName, ModelRegistry, type InstalledModel } from "../../../models/registry.js";
import { HubError, listGgufFiles, readRemoteGgufHeader, searchGgufRepos, type HubGgufFile } from "../../../models/hfSearch.js";
import { readModelConfig, type ModelConfig } from "../../../models/arch/config.js";
import { APP_TRAIN_CONTEXT, backendOfStatus, serveOnly, trainabilityOfPlan, trainerOnGpu, type Trainability } from "../../../models/trainVerdict.js";
import { readGguf } from "../../../models/gguf/reader.js";
import { assertLoadableGguf } from "../../../models/gguf/loadable.js";
import { ConflictError, NotFoundError, UnavailableError } from "../domainErrors.js";
import { LORA_DEFAULTS } from "../../../models/adapters/loraDefaults.js";
import { summarizeGguf } from "../../../models/gguf/summary.js";
import { hostAvailableBytes, parseByteSize } from "../../../models/plan/available.js";
import type { BackendMemory, ModelFootprint } from "../../../models/plan/memoryPlan.js";
import type { MemoryPlanSummary } from "../../../trainer/protocol.js";
import type { CoreEvents } from "../api/events.js";
import type { DeleteModelReply, HubFileView, ModelFilesReply, ModelSearchReply } from "../api/models.js";

/** The trainer's memory planning: loaded on the first list (it brings tfjs-core into the process). */
type Planning = typeof import("../../../models/trainability.js");

export type DownloadStateName = "downloading" | "paused" | "failed" | "done";

export interface DownloadState {
  id: string;
  state: DownloadStateName;
  bytes: number;
  total: number | null;
  speed: number | null;
  etaSeconds: number | null;
  error: string | null;
}

interface ActiveDownload extends DownloadState {
  abort?: AbortController;
  /** Why it was aborted: a pause keeps the partial file, a cancel removes it. */
  stopping?: "pause" | "cancel";
}

export interface ModelServiceOptions {
  dir: string;
  env?: NodeJS.ProcessEnv;
  /** Download progress and model-list changes, for /api/events (the contract's payloads: api/models.ts). */
  emit: <K extends "download" | "models">(name: K, payload: CoreEvents[K]) => void;
  /** The model the engine serves now, if any. */
  served?: () => { path: string; id: string; contextSize: number; gpuLayers: number } | null;
  /**
   * What the trainer last reported (the training supervisor's status): its backend, and its
   * memory plan for the served model. Absent or without a backend: the trainer has not started.
   */
  trainer?: () => { backend: string | null; device: string | null; memory: MemoryPlanSummary | null } | null;
  /** The training context and LoRA rank the app asks the trainer for (settings). */
  trainSettings?: () => { maxContext: number; rank: number };
  /** How many checkpoints were trained on the model at this path (they stay when it is deleted); absent: 0. */
  checkpointsOf?: (modelPath: string) => number;
  /** Serves another model now (core: ServedModel.switchTo); absent: a change takes effect on restart. */
  switchTo?: (m: InstalledModel) => Promise<void>;
}

/** A file's header facts, read once per version of the file. */
interface FileFacts {
  mtimeMs: number;
  size: number;
  architecture: string | null;
  /** null: the trainer cannot read it (another architecture, or not a model). */
  shape: ModelFootprint | null;
}

/** What a verdict is computed with; the same inputs give the same verdict (cached). */
interface PlanInputs {
  backend: BackendMemory;
  hostBytes: number;
  trainerRamLimitBytes: number | null;
  maxContext: number;
  rank: number;
  key: string;
}

/** Available RAM is planned in steps of this size, so that verdicts (and their cache) do not flicker with the page cache. */
const HOST_STEP = 64 * 2 ** 20;

/**
 * Models for the app API: the catalog with download state, installed and imported models, and
 * background downloads with pause / resume / cancel. A download survives a pause as its
 * `.part` file; resuming continues it with HTTP Range.
 */
export class ModelService {
  readonly registry: ModelRegistry;
  private readonly downloads = new Map<string, ActiveDownload>();

  constructor(private readonly opts: ModelServiceOptions) {
    this.registry = new ModelRegistry(opts.dir);
  }

  private readonly quantizations = new Map<string, string | null>();

  /** The served file's quantization, read from its GGUF header once (a served model need not be installed). */
  private quantizationOf(file: string): string | null {
    if (!this.quantizations.has(file)) {
      let q: string | null = null;
      try {
        q = describeGguf(file).quantization;
      } catch {
        // unreadable now (moved, replaced): the page shows "—"
      }
      this.quantizations.set(file, q);
    }
    return this.quantizations.get(file) ?? null;
  }

  private readonly names = new Map<string, string>();

  /** A file's one display name (models/registry.ts modelDisplayName): its installed entry's, else its header's, read once. */
  nameOf(file: string): string {
    const m = this.registry.list().find((x) => x.path === file);
    if (m) return modelDisplayName(m);
    if (!this.names.has(file)) {
      let name: string;
      try {
        name = describeGguf(file).name;
      } catch {
        name = modelDisplayName({ path: file });
      }
      this.names.set(file, name);
    }
    return this.names.get(file)!;
  }

  private readonly files = new Map<string, FileFacts>();
  private readonly verdicts = new Map<string, Trainability | null>();
  private recommendation: { key: string; value: Recommendation } | null = null;
  private planning: Promise<Planning> | null = null;

  private loadPlanning(): Promise<Planning> {
    this.planning ??= import("../../../models/trainability.js");
    return this.planning;
  }

  /** A file's architecture and shape from its GGUF header, read again only when the file changed. */
  private factsOf(file: string, planning: Planning): FileFacts | null {
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch {
      return null;
    }
    const known = this.files.get(file);
    if (known && known.mtimeMs === st.mtimeMs && known.size === st.size) return known;
    let facts: FileFacts = { mtimeMs: st.mtimeMs, size: st.size, architecture: null, shape: null };
    try {
      const gguf = readGguf(file);
      const summary = summarizeGguf(gguf);
      facts = { ...facts, architecture: summary.architecture, shape: summary.trainerSupported ? planning.modelFootprintOf(gguf) : null };
    } catch {
      // Not readable as a model the trainer knows: no verdict (the registry says why it is listed).
    }
    this.files.set(file, facts);
    return facts;
  }

  /** The backend, RAM, context and rank verdicts are computed with now. */
  private planInputs(): PlanInputs {
    const env = this.opts.env ?? process.env;
    let limit: number | null = null;
    try {
      limit = parseByteSize(env.CLAWRL_TRAINER_RAM_LIMIT);
    } catch {
      // A malformed CLAWRL_TRAINER_RAM_LIMIT: the trainer refuses to start and says so; plan without it here.
    }
    const available = Math.floor(hostAvailableBytes({}) / HOST_STEP) * HOST_STEP;
    const hostBytes = limit === null ? available : Math.min(available, limit);
    const backend = backendOfStatus(this.opts.trainer?.());
    const { maxContext, rank } = this.opts.trainSettings?.() ?? { maxContext: APP_TRAIN_CONTEXT, rank: LORA_DEFAULTS.rank };
    return { backend, hostBytes, trainerRamLimitBytes: limit, maxContext, rank, key: JSON.stringify([backend, hostBytes, limit, maxContext, rank]) };
  }

  private verdict(key: string, compute: () => Trainability | null): Trainability | null {
    if (!this.verdicts.has(key)) {
      if (this.verdicts.size > 500) this.verdicts.clear();
      this.verdicts.set(key, compute());
    }
    return this.verdicts.get(key) ?? null;
  }

  private catalogVerdict(c: CatalogEntry, p: PlanInputs, planning: Planning): Trainability | null {
    return this.verdict(`catalog:${c.id}|${p.key}`, () => {
      const shape = planning.catalogFootprint(c);
      return shape && planning.trainabilityOf(shape, { backend: p.backend, hostBytes: p.hostBytes, maxContext: p.maxContext, rank: p.rank });
    });
  }

  /**
   * An installed or served file's verdict: the trainer's own plan for the served model once it
   * has made one (/api/status training.memory), else the plan from the file's header.
   */
  private fileVerdict(file: string, p: PlanInputs, served: string | null, planning: Planning): Trainability | null {
    const st = this.opts.trainer?.() ?? null;
    if (served === file && st?.memory) return trainabilityOfPlan(st.memory);
    const facts = this.factsOf(file, planning);
    if (!facts) return null;
    if (!facts.shape) return facts.architecture ? serveOnly(facts.architecture, p.backend.name) : null;
    const shape = facts.shape;
    return this.verdict(`file:${file}|${facts.mtimeMs}|${facts.size}|${p.key}`, () =>
      planning.trainabilityOf(shape, { backend: p.backend, hostBytes: p.hostBytes, maxContext: p.maxContext, rank: p.rank }),
    );
  }

  private recommend(p: PlanInputs, planning: Planning): Recommendation {
    const ramBytes = os.totalmem();
    const key = JSON.stringify([ramBytes, p.backend, p.trainerRamLimitBytes, p.maxContext, p.rank, trainerOnGpu(this.opts.trainer?.())]);
    if (this.recommendation?.key !== key) {
      const planTraining = planning.catalogPlanner({ backend: p.backend, maxContext: p.maxContext, rank: p.rank });
      const onGpu = trainerOnGpu(this.opts.trainer?.());
      this.recommendation = {
        key,
        value: recommendModel({ ramBytes, vramBytes: 0, trainerRamLimitBytes: p.trainerRamLimitBytes, trainerOnGpu: onGpu, planTraining }),
      };
    }
    return this.recommendation.value;
  }

  /**
   * The catalog, installed models and downloads, each model with `training`: whether it trains
   * on this machine and how (null when not known). Verdicts are cached per file version and
   * planning inputs; the GGUF header of a file is read once per version.
   */
  async list() {
    const planning = await this.loadPlanning();
    const { models: installed, active: chosen } = this.registry.snapshot();
    const served = this.opts.served?.() ?? null;
    const activeEntry = served ? installed.find((m) => m.path === served.path) : chosen;
    const plan = this.planInputs();
    const rec = this.recommend(plan, planning);
    const servedPath = served?.path ?? null;
    const verdictOf = (file: string) => this.fileVerdict(file, plan, servedPath, planning);
    return {
      active: served
        ? {
            id: activeEntry?.id ?? served.id,
            name: this.nameOf(served.path),
            path: served.path,
            sizeBytes: fileSize(served.path),
            architecture: activeEntry?.architecture ?? null,
            trainable: activeEntry?.trainable ?? null,
            quantization: activeEntry?.quantization ?? this.quantizationOf(served.path),
            contextSize: served.contextSize,
            gpuLayers: served.gpuLayers,
            training: verdictOf(served.path),
          }
        : activeEntry
          ? { ...activeEntry, name: modelDisplayName(activeEntry), training: verdictOf(activeEntry.path) }
          : null,
      installed: installed.map((m) => ({
        ...m,
        name: modelDisplayName(m),
        diskBytes: m.origin === "import" ? 0 : (fileSize(m.path) ?? 0),
        embedding: isEmbeddingModel(m),
        checkpoints: this.opts.checkpointsOf?.(m.path) ?? 0,
        training: isEmbeddingModel(m) ? null : verdictOf(m.path),
      })),
      catalog: loadCatalog().map((c) => ({
        ...c,
        installed: installed.some((m) => m.id === c.id),
        recommended: c.id === rec.entry.id,
        download: this.publicState(c.id),
        training: this.catalogVerdict(c, plan, planning),
      })),
      embeddingCatalog: loadEmbeddingCatalog().map((e) => ({
        id: e.id,
        name: e.name,
        architecture: e.architecture,
        quantization: e.quantization,
        sizeBytes: e.sizeBytes,
        dimensions: e.dimensions,
        license: e.license,
        notes: e.notes,
        installed: installed.some((m) => m.id === e.id),
        download: this.publicState(e.id),
      })),
      downloads: [...this.downloads.values()].map((d) => this.publicState(d.id)),
      recommendation: { id: rec.entry.id, reason: rec.reason },
      restartRequired: Boolean(served && chosen && chosen.path !== served.path),
    };
  }

  private publicState(id: string): DownloadState | null {
    const d = this.downloads.get(id);
    if (!d) return null;
    const { abort: _a, stopping: _s, ...rest } = d;
    return rest;
  }

  /** A `download` event with the download's state now (it is in the map wherever this is called). */
  private emitState(id: string): void {
    const download = this.publicState(id);
    if (download) this.opts.emit("download", { download });
  }

  /** Starts (or resumes) a download in the background; returns its state at once. */
  pull(id: string): DownloadState {
    resolveModelSource(id, this.opts.env); // throws for unknown ids before anything starts
    const existing = this.downloads.get(id);
    if (existing?.state === "downloading") return this.publicState(id)!;
    const d: ActiveDownload = {
      id,
      state: "downloading",
      bytes: existing?.bytes ?? 0,
      total: existing?.total ?? null,
      speed: null,
      etaSeconds: null,
      error: null,
      abort: new AbortController(),
    };
    this.downloads.set(id, d);
    this.emitState(id);
    let last = 0;
    const onProgress = (p: DownloadProgress) => {
      Object.assign(d, { bytes: p.receivedBytes, total: p.totalBytes, speed: p.bytesPerSecond, etaSeconds: p.etaSeconds });
      const now = Date.now();
      if (now - last >= 500) {
        last = now;
        this.emitState(id);
      }
    };
    pullModel(this.registry, id, { env: this.opts.env, signal: d.abort!.signal, onProgress })
      .then((m) => {
        Object.assign(d, { state: "done", bytes: m.sizeBytes, total: m.sizeBytes, etaSeconds: 0 });
        this.emitState(id);
        this.opts.emit("models", { change: "installed", id });
      })
      .catch((err: unknown) => {
        if (err instanceof DownloadError && err.kind === "cancelled" && d.stopping) {
          if (d.stopping === "cancel") {
            this.removePartial(id);
            this.downloads.delete(id);
            this.opts.emit("download", { download: { id, state: "cancelled" } });
            return;
          }
          d.state = "paused";
        } else {
          d.state = "failed";
          d.error = (err as Error).message;
        }
        d.speed = null;
        d.etaSeconds = null;
        this.emitState(id);
      });
    return this.publicState(id)!;
  }

  pause(id: string): DownloadState {
    const d = this.mustGet(id);
    if (d.state === "downloading") {
      d.stopping = "pause";
      d.abort?.abort();
    }
    return this.publicState(id)!;
  }

  resume(id: string): DownloadState {
    const d = this.mustGet(id);
    if (d.state === "downloading") return this.publicState(id)!;
    return this.pull(id);
  }

  cancel(id: string): { id: string; state: "cancelled" } {
    const d = this.mustGet(id);
    if (d.state === "downloading") {
      d.stopping = "cancel";
      d.abort?.abort();
    } else {
      this.removePartial(id);
      this.downloads.delete(id);
      this.opts.emit("download", { download: { id, state: "cancelled" } });
    }
    return { id, state: "cancelled" };
  }

  importFile(file: string): InstalledModel {
    const m = this.registry.importFile(file);
    this.opts.emit("models", { change: "imported", id: m.id });
    return m;
  }

  /**
   * Makes a model the one to serve: at once when the core can switch (it loads the model, or
   * replaces the one it serves; resolves once the new one answers), else on restart.
   */
  async use(id: string): Promise<{ active: InstalledModel; restartRequired: boolean }> {
    const m = this.registry.get(id);
    if (!m) this.registry.setActive(id); // throws the registry's "unknown model" error
    const served = this.opts.served?.() ?? null;
    // Checked before the switch drains and closes the model served now: a hostile or damaged file is refused (422) and nothing changes.
    if (m) assertLoadableGguf(m.path);
    if (this.opts.switchTo && m && served?.path !== m.path) await this.opts.switchTo(m);
    const active = this.registry.setActive(id);
    this.opts.emit("models", { change: "active", id });
    const now = this.opts.served?.() ?? null;
    return { active, restartRequired: !now || now.path !== active.path };
  }

  /** Hugging Face repositories with GGUF files matching `query` (HF_ENDPOINT's search). */
  async search(query: string): Promise<ModelSearchReply> {
    try {
      return { query, repos: await searchGgufRepos(query, { env: this.opts.env }) };
    } catch (err) {
      throw hubProblem(err);
    }
  }

  /**
   * A repository's GGUF files, each with its quantization, size, and verdicts for this machine:
   * serving (the rule the recommendation applies, models/catalog.ts serveFit) and learning (the
   * trainer's memory plan, as for an installed file), from the header of one of its files read
   * over HTTP (quantizations of one model share its shape; each file's size is its own).
   */
  async searchFiles(repo: string): Promise<ModelFilesReply> {
    const env = this.opts.env;
    let files: HubGgufFile[];
    try {
      files = await listGgufFiles(repo, { env });
    } catch (err) {
      throw hubProblem(err);
    }
    const planning = await this.loadPlanning();
    const plan = this.planInputs();
    const header = await this.remoteShape(repo, files);
    const installed = this.registry.list();
    const machine = { ramBytes: os.totalmem(), vramBytes: 0 };
    const view = (f: HubGgufFile): HubFileView => {
      const id = `hf:${repo}/${f.file}`;
      let training: Trainability | null = null;
      if (header.config) {
        const config = header.config;
        training = this.verdict(`hub:${id}|${f.sizeBytes}|${plan.key}`, () =>
          planning.configTrainability(config, f.sizeBytes, { backend: plan.backend, hostBytes: plan.hostBytes, maxContext: plan.maxContext, rank: plan.rank }),
        );
      } else if (header.architecture) training = serveOnly(header.architecture, plan.backend.name);
      return {
        id,
        file: f.file,
        quantization: f.quantization,
        sizeBytes: f.sizeBytes,
        parts: f.parts,
        refused: f.refused,
        serve: serveFit(serveMemoryOf(f.sizeBytes, header.kvBytesPerToken), machine),
        training: f.refused ? null : training,
        installed: installed.some((m) => m.id === id),
        download: this.publicState(id),
      };
    };
    return { repo, architecture: header.architecture, headerNote: header.note, files: files.map(view) };
  }

  private readonly headers = new Map<
    string,
    { architecture: string | null; config: ModelConfig | null; kvBytesPerToken: number | null; note: string | null }
  >();

  /** The architecture and shape of a repository's model, from the header of its smallest downloadable file (read once per repository and file). */
  private async remoteShape(repo: string, files: HubGgufFile[]) {
    const probe = files.find((f) => !f.refused);
    if (!probe) return { architecture: null, config: null, kvBytesPerToken: null, note: "No single-file model in this repository to read." };
    const key = `${repo}/${probe.file}|${probe.sizeBytes}`;
    const known = this.headers.get(key);
    if (known) return known;
    let result: { architecture: string | null; config: ModelConfig | null; kvBytesPerToken: number | null; note: string | null };
    try {
      const gguf = await readRemoteGgufHeader(repo, probe.file, probe.sizeBytes, { env: this.opts.env });
      const s = summarizeGguf(gguf);
      result = {
        architecture: s.architecture,
        config: s.trainerSupported ? readModelConfig(gguf) : null,
        kvBytesPerToken: s.kvBytesPerToken,
        note: null,
      };
    } catch (err) {
      // The list still helps without the verdicts: say why they are missing.
      return {
        architecture: null,
        config: null,
        kvBytesPerToken: null,
        note: `Whether it can learn here is known once it is downloaded: its header could not be read (${(err as Error).message}).`,
      };
    }
    if (this.headers.size > 100) this.headers.clear();
    this.headers.set(key, result);
    return result;
  }

  /**
   * Deletes an installed model: its downloaded file (an imported one stays where it is) and its
   * place in the list. Refused for the model served now (switch to another first). Its
   * checkpoints stay: they belong to its learning line and serve again if the same file returns.
   */
  remove(id: string): DeleteModelReply {
    const m = this.registry.get(id);
    if (!m) throw new NotFoundError(`no installed model '${id}'`);
    const served = this.opts.served?.() ?? null;
    if (served?.path === m.path) {
      throw new ConflictError(`${modelDisplayName(m)} is the model serving now: switch to another model first, then delete it.`, { code: "model_in_use" });
    }
    const freedBytes = m.origin === "import" ? 0 : (fileSize(m.path) ?? 0);
    const checkpointsKept = this.opts.checkpointsOf?.(m.path) ?? 0;
    const removed = this.registry.remove(id);
    const d = this.downloads.get(id);
    if (d && d.state !== "downloading") this.downloads.delete(id);
    this.names.delete(m.path);
    this.opts.emit("models", { change: "removed", id });
    return { removed, freedBytes, fileDeleted: m.origin !== "import", checkpointsKept };
  }

  private mustGet(id: string): ActiveDownload {
    const d = this.downloads.get(id);
    if (!d) throw new NotFoundError(`no download of '${id}'`);
    return d;
  }

  private removePartial(id: string): void {
    const src = resolveModelSource(id, this.opts.env);
    const dest = this.registry.downloadPath(src.file);
    for (const f of [`${dest}.part`, `${dest}.part.json`]) fs.rmSync(f, { force: true });
  }

  /** Stops running downloads (their partial files stay for a later resume). */
  close(): void {
    for (const d of this.downloads.values()) {
      if (d.state === "downloading") {
        d.stopping = "pause";
        d.abort?.abort();
      }
    }
  }
}

/** The hub's failures in the domain's words: unreachable → unavailable (the offline sentence), no such repository → not found. */
function hubProblem(err: unknown): Error {
  if (err instanceof HubError) {
    if (err.kind === "not-found") return new NotFoundError(err.message);
    return new UnavailableError(err.message, { code: err.kind === "unreachable" ? "offline" : "hub_error" });
  }
  return err as Error;
}

function fileSize(p: string): number | null {
  try {
    return fs.statSync(p).size;
  } catch {
    return null;
  }
}
