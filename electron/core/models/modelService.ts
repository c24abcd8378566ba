import fs from "node:fs";
import os from "node:os";
import { loadCatalog, recommendModel } from "../../../models/catalog.js";
import { DownloadError, type DownloadProgress } from "../../../models/downloader.js";
import { resolveModelSource } from "../../../models/hfSource.js";
import { pullModel } from "../../../models/pull.js";
import { describeGguf, ModelRegistry, type InstalledModel } from "../../../models/registry.js";

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
  /** Download progress and model-list changes, for /api/events. */
  emit: (name: "download" | "models", payload: Record<string, unknown>) => void;
  /** The model the engine serves now, if any. */
  served?: () => { path: string; id: string; contextSize: number; gpuLayers: number } | null;
}

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

  list() {
    const { models: installed, active: chosen } = this.registry.snapshot();
    const served = this.opts.served?.() ?? null;
    const activeEntry = served ? installed.find((m) => m.path === served.path) : chosen;
    const rec = recommendModel({ ramBytes: os.totalmem(), vramBytes: 0 });
    return {
      active: served
        ? { id: activeEntry?.id ?? served.id, name: activeEntry?.name ?? served.id, path: served.path, sizeBytes: fileSize(served.path), architecture: activeEntry?.architecture ?? null, trainable: activeEntry?.trainable ?? null, quantization: activeEntry?.quantization ?? this.quantizationOf(served.path), contextSize: served.contextSize, gpuLayers: served.gpuLayers }
        : activeEntry ?? null,
      installed,
      catalog: loadCatalog().map((c) => ({
        ...c,
        installed: installed.some((m) => m.id === c.id),
        recommended: c.id === rec.entry.id,
        download: this.publicState(c.id),
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

  /** Starts (or resumes) a download in the background; returns its state at once. */
  pull(id: string): DownloadState {
    resolveModelSource(id, this.opts.env); // throws for unknown ids before anything starts
    const existing = this.downloads.get(id);
    if (existing?.state === "downloading") return this.publicState(id)!;
    const d: ActiveDownload = { id, state: "downloading", bytes: existing?.bytes ?? 0, total: existing?.total ?? null, speed: null, etaSeconds: null, error: null, abort: new AbortController() };
    this.downloads.set(id, d);
    this.opts.emit("download", { download: this.publicState(id) });
    let last = 0;
    const onProgress = (p: DownloadProgress) => {
      Object.assign(d, { bytes: p.receivedBytes, total: p.totalBytes, speed: p.bytesPerSecond, etaSeconds: p.etaSeconds });
      const now = Date.now();
      if (now - last >= 500) {
        last = now;
        this.opts.emit("download", { download: this.publicState(id) });
      }
    };
    pullModel(this.registry, id, { env: this.opts.env, signal: d.abort!.signal, onProgress })
      .then((m) => {
        Object.assign(d, { state: "done", bytes: m.sizeBytes, total: m.sizeBytes, etaSeconds: 0 });
        this.opts.emit("download", { download: this.publicState(id) });
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
        this.opts.emit("download", { download: this.publicState(id) });
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

  /** Makes a model the one to serve. Switching the served model takes effect on restart. */
  use(id: string): { active: InstalledModel; restartRequired: boolean } {
    const m = this.registry.setActive(id);
    this.opts.emit("models", { change: "active", id });
    const served = this.opts.served?.() ?? null;
    return { active: m, restartRequired: !served || served.path !== m.path };
  }

  private mustGet(id: string): ActiveDownload {
    const d = this.downloads.get(id);
    if (!d) throw Object.assign(new Error(`no download of '${id}'`), { statusCode: 404 });
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

function fileSize(p: string): number | null {
  try {
    return fs.statSync(p).size;
  } catch {
    return null;
  }
}
