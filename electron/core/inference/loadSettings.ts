import os from "node:os";
import path from "node:path";
import type { ModelLoadDefaults, ModelLoadLimits, ModelLoadPatch, ModelLoadServing, ModelLoadSettings } from "../api/modelLoad.js";
import { readGguf } from "../../../models/gguf/reader.js";
import { summarizeGguf } from "../../../models/gguf/summary.js";
import type { BackendName, BackendPreference } from "./backend.js";
import type { EngineInfo, EngineOptions } from "./engine.js";
import { defaultServingShape } from "./contextSize.js";
import { DEFAULT_SEQUENCES } from "./engine.js";
import { defaultThreads } from "./threads.js";

/** What Engine.load takes of the load settings. */
export type EngineLoad = Required<Pick<EngineOptions, "backend">> & Pick<EngineOptions, "maxContextSize" | "gpuLayers" | "threads">;

/** The key a model's load settings are stored under: its file name, as its learning line names it (training/checkpoints.ts modelFileOf). */
export function loadKeyOf(modelPath: string): string {
  return path.basename(modelPath);
}

/**
 * The options a model loads with: `clawrl serve`'s flags for this run, else the model's stored
 * settings, else the app's (the Settings' backend; $CLAWRL_THREADS; the engine's own defaults).
 */
export function engineLoadOf(
  stored: ModelLoadSettings | undefined,
  overrides: ModelLoadPatch,
  app: { backend: BackendPreference; threads?: number },
): EngineLoad {
  const pick = <K extends keyof ModelLoadSettings>(k: K): ModelLoadSettings[K] | null => (overrides[k] ?? stored?.[k] ?? null) as ModelLoadSettings[K] | null;
  return {
    backend: pick("backend") ?? app.backend,
    maxContextSize: pick("contextSize") ?? undefined,
    gpuLayers: pick("gpuLayers") ?? undefined,
    threads: pick("threads") ?? app.threads,
  };
}

/** What the load settings need of a model file, from one read of its GGUF header. */
export interface ModelFileFacts {
  limits: ModelLoadLimits;
  sizeBytes: number;
  kvBytesPerToken: number | null;
}

/** The file's trained context, layer count, size and KV cache per token (its GGUF header) and this machine's threads. */
export function modelFileFactsOf(modelPath: string): ModelFileFacts {
  const limits: ModelLoadLimits = { trainContextSize: null, layers: null, cpuThreads: os.availableParallelism() };
  try {
    const s = summarizeGguf(readGguf(modelPath));
    return { limits: { ...limits, trainContextSize: s.contextLength, layers: s.layers }, sizeBytes: s.fileSize, kvBytesPerToken: s.kvBytesPerToken };
  } catch {
    // moved or unreadable: only the schema's bounds apply (the load itself will say what is wrong)
    return { limits, sizeBytes: 0, kvBytesPerToken: null };
  }
}

/** What the app picks for settings left to it: from the engine when this model serves with them, else from the file. */
export function loadDefaultsOf(
  file: ModelFileFacts,
  backend: BackendPreference,
  app: { threads?: number },
  serving: EngineInfo | null,
  usedDefault: EngineLoad | null,
): ModelLoadDefaults {
  const { limits } = file;
  return {
    // node-llama-cpp fits the trained context to memory when it loads: the served figure when it was left to it.
    contextSize:
      serving && usedDefault?.maxContextSize === undefined
        ? serving.contextSize
        : limits.trainContextSize === null
          ? null
          : // "auto" with no GPU is the CPU; on a GPU the figure shown is the CPU's until the model serves
            backend === "cpu" || backend === "auto"
            ? defaultServingShape(limits.trainContextSize, file.kvBytesPerToken, DEFAULT_SEQUENCES).contextSize
            : limits.trainContextSize,
    gpuLayers: serving && usedDefault?.gpuLayers === undefined ? serving.gpuLayers : null,
    // unknown size (0): the threads default is the machine's
    threads:
      app.threads ??
      (file.sizeBytes > 0 ? defaultThreads(file.sizeBytes) : undefined) ??
      (serving && usedDefault?.threads === undefined ? serving.threads : limits.cpuThreads),
    backend,
  };
}

const BACKEND_WORDS: Record<BackendName, string> = { cuda: "CUDA", vulkan: "Vulkan", metal: "Metal", cpu: "the CPU" };

/** A named backend that could not be used, in plain words (null when it serves on what was asked, or auto picked). */
export function backendNotice(info: EngineInfo): string | null {
  const asked = info.requestedBackend;
  if (asked === "auto" || asked === info.backend) return null;
  const why = info.backendSkipped.find((s) => s.backend === asked)?.reason;
  return `${BACKEND_WORDS[asked]} could not be used${why ? ` (${why})` : ""}, so the model runs on ${BACKEND_WORDS[info.backend]} instead.`;
}

/**
 * What each model was last loaded with, this run: the options that worked (a failed reload
 * brings the model back with them, not with the settings that failed) and the last failure.
 */
export class ModelLoads {
  private readonly good = new Map<string, EngineLoad>();
  private readonly failures = new Map<string, string>();

  loaded(modelPath: string, load: EngineLoad): void {
    this.good.set(loadKeyOf(modelPath), load);
  }

  /** The options `modelPath` last loaded with; undefined when it has not loaded this run. */
  lastGood(modelPath: string): EngineLoad | undefined {
    return this.good.get(loadKeyOf(modelPath));
  }

  failed(modelPath: string, message: string | null): void {
    if (message === null) this.failures.delete(loadKeyOf(modelPath));
    else this.failures.set(loadKeyOf(modelPath), message);
  }

  failure(modelPath: string): string | null {
    return this.failures.get(loadKeyOf(modelPath)) ?? null;
  }
}

/** The served engine as the load-settings reply shows it. */
export function servingView(info: EngineInfo, wanted: EngineLoad, used: EngineLoad | undefined): ModelLoadServing {
  const same = (a: EngineLoad | undefined, b: EngineLoad) =>
    !!a && a.backend === b.backend && a.maxContextSize === b.maxContextSize && a.gpuLayers === b.gpuLayers && a.threads === b.threads;
  return {
    contextSize: info.contextSize,
    gpuLayers: info.gpuLayers,
    threads: info.threads,
    backend: info.backend,
    requested: info.requestedBackend,
    adapter: info.adapter,
    reloadNeeded: !same(used, wanted),
  };
}
