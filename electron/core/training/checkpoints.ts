import type { CheckpointEntryView } from "../api/training.js";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Store } from "../store/store.js";
import type { CheckpointMeta } from "../store/state.js";
import { fsyncDir, writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import type { GateResult } from "./gate.js";

export const CKPT_FILES = { adapter: "adapter.gguf", optimizer: "optimizer.bin", metrics: "metrics.json" } as const;
/** Newest checkpoints kept besides the pinned ones and the one being served. */
export const KEEP_NEWEST = 20;
const STAGING_PREFIX = ".staging-";

/**
 * A checkpoint in the lowdb index (state.json `checkpoints`): the contract's CheckpointEntryView
 * (one declaration of its fields), with the gate's full result and the core's revert record.
 */
export interface CheckpointEntry extends CheckpointMeta, Omit<CheckpointEntryView, "gate" | "reverted"> {
  /** why and when the watch rolled it back (verdict "reverted") */
  reverted?: RevertInfo;
  gate: GateResult;
}

/** A rollback by the watch on the served adapter (serveWatch.ts), as the checkpoint keeps it. */
export interface RevertInfo {
  at: string;
  reason: string;
  rule: "reward" | "fluency" | "ancestor";
  /** the checkpoint served instead (null: the base model) */
  to: number | null;
  /** the comparisons that fired (serveWatch.ts Comparison), for inspection */
  stats?: unknown;
}

export class CheckpointError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "CheckpointError";
  }
}

/** The fields of an orphan checkpoint's metrics.json that recoverOrphans reads back. */
interface OrphanMetrics {
  checkpoint?: number;
  createdAt?: string;
  parent?: number | null;
  gate?: GateResult;
  reverted?: RevertInfo;
  runId?: string;
  sampleIds?: string[];
  meanReward?: number | null;
  loss?: number;
  klToServing?: number | null;
  totalSteps?: number;
  sha256?: CheckpointEntry["sha256"];
}

function sha256File(file: string): string {
  return createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

/**
 * A file's sha256 read in chunks, the event loop running between them: a new checkpoint's
 * adapter and optimizer state are tens of MB (hundreds at 1.7B), and hashed in one piece they
 * stalled the core, chat's first tokens with it, for 367 ms at the 0.5B shape.
 */
async function sha256FileChunked(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return h.digest("hex");
}

export interface CommitInfo {
  verdict: "published" | "rejected";
  runId: string;
  sampleIds: string[];
  meanReward: number | null;
  loss: number;
  kl: number | null;
  gate: GateResult;
  totalSteps: number;
  parent: number | null;
  /** the base model's file (modelFileOf): a checkpoint is served only on the model it was trained on */
  model: string;
}

/** How a checkpoint names the base model it was trained on: the GGUF's file name. */
export function modelFileOf(modelPath: string): string {
  return path.basename(modelPath);
}

/** Whether checkpoint `c` can be served on the model at `modelPath` (an old entry that never recorded its model: assumed so). */
export function trainedOn(c: { model?: string }, modelPath: string): boolean {
  return c.model === undefined || c.model === modelFileOf(modelPath);
}

/**
 * checkpoints/<n>/ directories (adapter.gguf, optimizer.bin, metrics.json) and their index in
 * state.json. A candidate is written by the trainer into a staging directory, completed here
 * (metrics with the gate's verdict and file checksums), fsynced, and renamed into place in one
 * step: a crash leaves either no checkpoint or a whole one, never half of one.
 */
export class Checkpoints {
  constructor(
    private readonly store: Store,
    readonly root: string,
  ) {
    fs.mkdirSync(root, { recursive: true });
  }

  list(): CheckpointEntry[] {
    return (this.store.state.checkpoints as CheckpointEntry[]).slice().sort((a, b) => a.id - b.id);
  }

  get(n: number): CheckpointEntry | undefined {
    return this.list().find((c) => c.id === n);
  }

  /** A new staging directory name for a run (does not create it: the trainer does). */
  stagingDir(runId: string): string {
    return path.join(this.root, `${STAGING_PREFIX}${runId.replace(/[^A-Za-z0-9_-]/g, "_")}`);
  }

  /** Removes staging directories (a trainer killed mid-write leaves one). */
  cleanStaging(): number {
    let n = 0;
    for (const name of fs.readdirSync(this.root)) {
      if (!name.startsWith(STAGING_PREFIX)) continue;
      fs.rmSync(path.join(this.root, name), { recursive: true, force: true });
      n++;
    }
    return n;
  }

  /**
   * Indexes checkpoint directories that are on disk but not in state.json (the core stopped
   * between the rename and the index write), from their metrics.json. Returns them.
   */
  recoverOrphans(): CheckpointEntry[] {
    const known = new Set(this.list().map((c) => c.id));
    const found: CheckpointEntry[] = [];
    for (const name of fs.readdirSync(this.root)) {
      if (!/^\d+$/.test(name) || known.has(Number(name))) continue;
      const dir = path.join(this.root, name);
      try {
        const m = JSON.parse(fs.readFileSync(path.join(dir, CKPT_FILES.metrics), "utf8")) as OrphanMetrics; // a file we wrote; the fields that matter are checked below
        if (m.checkpoint !== Number(name) || !m.gate || !m.sha256 || !Array.isArray(m.sampleIds)) continue;
        found.push({
          id: Number(name),
          createdAt: String(m.createdAt),
          path: path.join(dir, CKPT_FILES.adapter),
          parent: m.parent ?? null,
          version: `ckpt-${name}`,
          dir,
          verdict: m.reverted ? "reverted" : m.gate.verdict === "published" ? "published" : "rejected",
          ...(m.reverted ? { reverted: m.reverted } : {}),
          pinned: false,
          runId: String(m.runId),
          sampleIds: m.sampleIds,
          samples: m.sampleIds.length,
          meanReward: m.meanReward ?? null,
          loss: Number(m.loss),
          kl: m.klToServing ?? null,
          gate: m.gate,
          totalSteps: Number(m.totalSteps),
          swapPauseMs: null,
          sha256: m.sha256,
        });
      } catch {
        // Not ours or unreadable: left alone, never served.
      }
    }
    if (found.length) {
      this.store.updateState((d) => {
        d.checkpoints.push(...found);
      });
    }
    return found;
  }

  private nextNumber(): number {
    const used = this.list().map((c) => c.id);
    // Directories on disk count too: a checkpoint renamed into place whose index write was lost.
    for (const name of fs.readdirSync(this.root)) if (/^\d+$/.test(name)) used.push(Number(name));
    return used.length ? Math.max(...used) + 1 : 1;
  }

  /** Completes a staged candidate and moves it into place as checkpoint <n>. */
  async commit(stagingDir: string, info: CommitInfo): Promise<CheckpointEntry> {
    for (const f of Object.values(CKPT_FILES)) {
      if (!fs.existsSync(path.join(stagingDir, f))) throw new CheckpointError(`candidate in ${stagingDir} is incomplete: ${f} is missing`, 500);
    }
    const sha256 = {
      adapter: await sha256FileChunked(path.join(stagingDir, CKPT_FILES.adapter)),
      optimizer: await sha256FileChunked(path.join(stagingDir, CKPT_FILES.optimizer)),
    };
    // From the number to the rename nothing awaits: two commits cannot take the same number.
    const n = this.nextNumber();
    const dir = path.join(this.root, String(n));
    const createdAt = new Date().toISOString();
    const metricsFile = path.join(stagingDir, CKPT_FILES.metrics);
    const trainerMetrics = JSON.parse(fs.readFileSync(metricsFile, "utf8")) as Record<string, unknown>;
    // The trainer's fields stay as they are (a resume reads them); ours are added beside them.
    const metrics = {
      ...trainerMetrics,
      checkpoint: n,
      createdAt,
      parent: info.parent,
      runId: info.runId,
      samplesUsed: info.sampleIds.length,
      sampleIds: info.sampleIds,
      meanReward: info.meanReward,
      loss: info.loss,
      klToServing: info.kl,
      gate: info.gate,
      sha256,
    };
    writeFileAtomicSync(metricsFile, `${JSON.stringify(metrics, null, 2)}\n`);
    fsyncDir(stagingDir);
    fs.renameSync(stagingDir, dir);
    fsyncDir(this.root);
    const entry: CheckpointEntry = {
      id: n,
      createdAt,
      path: path.join(dir, CKPT_FILES.adapter),
      parent: info.parent,
      version: `ckpt-${n}`,
      dir,
      verdict: info.verdict,
      pinned: false,
      runId: info.runId,
      sampleIds: info.sampleIds,
      samples: info.sampleIds.length,
      meanReward: info.meanReward,
      loss: info.loss,
      kl: info.kl,
      gate: info.gate,
      totalSteps: info.totalSteps,
      swapPauseMs: null,
      sha256,
      model: info.model,
    };
    this.store.updateState((d) => {
      d.checkpoints.push(entry);
    });
    this.applyRetention();
    return entry;
  }

  update(n: number, patch: Partial<Pick<CheckpointEntry, "pinned" | "swapPauseMs">>): CheckpointEntry {
    let out: CheckpointEntry | undefined;
    this.store.updateState((d) => {
      const c = (d.checkpoints as CheckpointEntry[]).find((x) => x.id === n);
      if (c) {
        Object.assign(c, patch);
        out = { ...c };
      }
    });
    if (!out) throw new CheckpointError(`no checkpoint ${n}`, 404);
    if (patch.pinned === false) this.applyRetention();
    return out;
  }

  /**
   * Marks a published checkpoint as rolled back by the watch: in the index and in its
   * metrics.json (rewritten atomically; the adapter and optimizer files, which the checksums
   * cover, stay as they are). The checkpoint and the samples it names are kept.
   */
  markReverted(n: number, info: RevertInfo): CheckpointEntry {
    let out: CheckpointEntry | undefined;
    this.store.updateState((d) => {
      const c = (d.checkpoints as CheckpointEntry[]).find((x) => x.id === n);
      if (c) {
        c.verdict = "reverted";
        c.reverted = info;
        out = { ...c };
      }
    });
    if (!out) throw new CheckpointError(`no checkpoint ${n}`, 404);
    const file = path.join(out.dir, CKPT_FILES.metrics);
    try {
      const m = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
      writeFileAtomicSync(file, `${JSON.stringify({ ...m, reverted: info }, null, 2)}\n`);
    } catch (e) {
      console.warn(`checkpoint ${n}: could not record the rollback in ${CKPT_FILES.metrics}: ${(e as Error).message}`);
    }
    return out;
  }

  /**
   * Checks that checkpoint n is whole and unchanged on disk (files present, checksums as
   * written). Throws CheckpointError with a message naming the problem.
   */
  verifyFiles(n: number): CheckpointEntry {
    const c = this.get(n);
    if (!c) throw new CheckpointError(`no checkpoint ${n}`, 404);
    for (const [key, f] of [
      ["adapter", CKPT_FILES.adapter],
      ["optimizer", CKPT_FILES.optimizer],
    ] as const) {
      const file = path.join(c.dir, f);
      if (!fs.existsSync(file)) throw new CheckpointError(`checkpoint ${n} is damaged: ${f} is missing`, 422);
      if (sha256File(file) !== c.sha256[key])
        throw new CheckpointError(`checkpoint ${n} is damaged: ${f} does not match the checksum recorded when it was written`, 422);
    }
    if (!fs.existsSync(path.join(c.dir, CKPT_FILES.metrics))) throw new CheckpointError(`checkpoint ${n} is damaged: ${CKPT_FILES.metrics} is missing`, 422);
    return c;
  }

  /** Keeps the newest KEEP_NEWEST, every pinned one, the active one and each other model's line; deletes the rest. */
  applyRetention(): void {
    const active = this.store.state.training.activeCheckpoint;
    const all = this.list();
    const keep = new Set(all.slice(-KEEP_NEWEST).map((c) => c.id));
    for (const n of Object.values(this.store.state.training.activeByModel ?? {})) if (n !== null) keep.add(n);
    const drop = all.filter((c) => !keep.has(c.id) && !c.pinned && c.id !== active);
    if (drop.length === 0) return;
    const ids = new Set(drop.map((c) => c.id));
    this.store.updateState((d) => {
      d.checkpoints = d.checkpoints.filter((c) => !ids.has(c.id));
    });
    for (const c of drop) fs.rmSync(c.dir, { recursive: true, force: true });
  }
}

/**
 * Each model keeps its own learning line (issue 32): the index's active checkpoint always belongs
 * to `training.servedModel`. Making another model the served one remembers the line of the one
 * before (`training.activeByModel`) and makes this model's line active: the checkpoint it served
 * last, else its newest pinned published one, else none (the base model). Called at start and on
 * every switch (and on the switch back after a failed one), so a model switched away from and
 * back to serves what it served, after a restart too. Models are named by file (modelFileOf).
 */
export function enterModelLine(store: Store, checkpoints: Checkpoints, modelPath: string): void {
  const file = modelFileOf(modelPath);
  const t = store.state.training;
  // An index from before servedModel was kept: the active checkpoint's own model (an entry that
  // never recorded one is assumed to be this model's, as trainedOn does).
  const prev = t.servedModel ?? (t.activeCheckpoint !== null ? (checkpoints.get(t.activeCheckpoint)?.model ?? file) : null);
  if (prev === file && t.servedModel === file) return;
  const pinned =
    checkpoints
      .list()
      .filter((c) => c.pinned && c.verdict === "published" && c.model === file)
      .at(-1)?.id ?? null;
  store.updateState((d) => {
    const lines = { ...(d.training.activeByModel ?? {}) };
    if (prev !== null && prev !== file) lines[prev] = d.training.activeCheckpoint;
    if (prev !== file) d.training.activeCheckpoint = file in lines ? lines[file] : pinned;
    d.training.activeByModel = lines;
    d.training.servedModel = file;
  });
}

/**
 * The adapter to serve at start: the active checkpoint if it is whole and was trained on the
 * model being loaded, else none (with a warning, and the index says base model), so a damaged
 * file or another model's adapter never stops the app starting.
 */
export function startupAdapter(store: Store, checkpoints: Checkpoints, modelPath: string): { path: string; version: string } | undefined {
  enterModelLine(store, checkpoints, modelPath);
  const n = store.state.training.activeCheckpoint;
  if (n === null) return undefined;
  try {
    const c = checkpoints.verifyFiles(n);
    if (!trainedOn(c, modelPath)) throw new CheckpointError(`checkpoint ${n} was trained on ${c.model}, not on ${modelFileOf(modelPath)}`, 409);
    return { path: c.path, version: c.version };
  } catch (e) {
    console.warn(`serving the base model: ${(e as Error).message}`);
    store.updateState((d) => {
      d.training.activeCheckpoint = null;
    });
    return undefined;
  }
}
