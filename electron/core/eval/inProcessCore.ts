import type { DataPaths } from "../config/paths.js";
import type { EngineOptions } from "../inference/engine.js";
import type { Store } from "../store/store.js";

/**
 * What the eval needs of a core it starts in its own process (core.ts RunningCore has all of it):
 * its address and token for the client, its data paths and store for the samples' export.
 */
export interface EvalCore {
  url: string;
  token: string;
  paths: DataPaths;
  store: Store;
  close(): Promise<void>;
}

/** What the eval asks of a core it starts (a subset of core.ts CoreOptions). */
export interface EvalCoreOptions {
  model: string;
  dataDir: string;
  uiDir: string;
  engine: Omit<EngineOptions, "modelPath">;
  /** false: no learning loop (the baseline); else the scenario's run length (absent: the app's steps policy) and gate overrides */
  training: false | { stepsPerRun?: number; gate: { klBound?: number; fluencyMargin?: number } };
}

/**
 * Starts a core in this process: core.ts startCore, passed in by the eval's caller (the CLI, a
 * bench, a test), so that the eval never imports the composition root that serves its routes.
 */
export type StartEvalCore = (opts: EvalCoreOptions) => Promise<EvalCore>;
