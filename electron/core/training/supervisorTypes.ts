import type { PhaseProgressView, TrainingPhase, TrainingStatusView } from "../api/training.js";
import type { EventBus } from "../rollout/events.js";
import type { Store } from "../store/store.js";
import type { SwapResult } from "../inference/adapterGate.js";
import type { FluencyMeasure } from "../inference/fluencyProbe.js";
import type { Foreground } from "../inference/foreground.js";
import type { MemoryPlanSummary, TrainSettings } from "../../../trainer/protocol.js";
import type { ImportSummary } from "../adapters/importAdapter.js";
import { CheckpointError, type CheckpointEntry, type Checkpoints, type RevertInfo } from "./checkpoints.js";
import type { GateOptions } from "./gate.js";
import type { SamplePool } from "./pool.js";
import type { WatchRule, WatchStatus } from "./serveWatch.js";
import type { WorkerSpawnOptions } from "./workerClient.js";
import type { LrPolicy } from "./lrPolicy.js";
import type { Serving } from "./serving.js";
import type { TrainerProcess } from "./trainerProcess.js";
import type { RunLoop } from "./runLoop.js";
import { MIN_STEPS_PER_RUN } from "./stepsPolicy.js";

/**
 * Optimizer steps of a learning cycle, each over the whole batch, when the gate has not passed
 * a candidate yet: the fewest the steps policy takes (stepsPolicy.ts; docs/method.md, "Steps per
 * cycle"). The doctor's cycle estimate follows it.
 */
export const DEFAULT_STEPS_PER_RUN = MIN_STEPS_PER_RUN;

/** What the supervisor needs from the inference engine. */
export interface AdapterTarget {
  swapAdapter(adapterPath: string | null, version: string): Promise<SwapResult>;
}

export interface SupervisorOptions {
  store: Store;
  bus: EventBus;
  pool: SamplePool;
  checkpoints: Checkpoints;
  engine: AdapterTarget;
  /**
   * The engine's first-token waits (inference/foreground.ts): while chat waits for a first
   * token the trainer process is suspended, at most FOREGROUND_MAX_SUSPEND_MS at a time
   * (trainerProcess.ts). Absent: it is never suspended.
   */
  foreground?: Foreground;
  modelPath: string;
  /** optimizer steps per batch, fixed; absent (the app): as many as the gate's verdicts allow (stepsPolicy.ts) */
  stepsPerRun?: number;
  gate?: Partial<GateOptions>;
  /** recent main turns the gate measures KL on; liked/disliked answers compared, each (default 8) */
  evalTurns?: number;
  /** first restart delay after a trainer crash; doubles up to 30 s (default 1 s) */
  restartBackoffMs?: number;
  /** smallest learning-rate scale after repeated rejections (default 1/64: lrPolicy.ts MIN_LR_SCALE) */
  minLrScale?: number;
  worker?: WorkerSpawnOptions;
  /**
   * Samples a candidate's own answers with llama.cpp and scores them with the base model, for
   * the gate's fluency check and the watch's (fluencyProbe.ts). Without one, fluency is not
   * checked (the KL checks still are).
   */
  probe?: FluencyMeasure | null;
  /** how many prompts the fluency check samples (recent and held-back, half each at most; default 8) and answers per prompt (default 4) */
  probePrompts?: number;
  probeSamples?: number;
  /** longest answer the fluency check samples (default 64 tokens, or less when the turn was served with less) */
  probeMaxTokens?: number;
  /** false: the fluency check samples every answer; default: it stops once its verdict is clear (sequentialFluency.ts) */
  probeSequential?: boolean;
  /**
   * Start ahead (issue 31): the trainer process starts, and loads the model, once this many
   * samples are ready, before a run is due, so the run does not wait for it; it stays up
   * between runs. Not when memory is short (below `lowMemoryBytes`, or below what the trainer's
   * plan needs on the host, once known). Default 1; false: it starts when a run is due.
   * Then too the gate's fluency probe samples the base model's answers ahead (its `prepare`);
   * false: the gate samples them.
   */
  startAhead?: number | false;
  /** Memory available on the machine below which an idle trainer is stopped, its memory given back (default 512 MiB); it starts again when there is work. */
  lowMemoryBytes?: number;
  /** How often an idle trainer checks the machine's memory, ms (default 30 s). */
  memoryCheckMs?: number;
  /** The machine's available memory (default: MemAvailable, models/plan/available.ts); tests give their own. */
  availableBytes?: () => number;
  /** the rule for "clearly worse than its parent" (serveWatch.ts); false: no watch */
  watch?: Partial<WatchRule> | false;
}

/**
 * The learning loop's live status: the contract's TrainingStatusView (one declaration), with the
 * core's own types for the parts the contract re-states for the UI.
 */
export interface TrainingLiveStatus extends Omit<TrainingStatusView, "memory" | "watch" | "lastRevert"> {
  /** The trainer's memory plan for the served model: where the weights live, or why it cannot train. */
  memory: MemoryPlanSummary | null;
  /** the checkpoint the watch measures against its parent, with the latest figures; null when none */
  watch: WatchStatus | null;
  /** the latest rollback by the watch (also kept on the checkpoint) */
  lastRevert: (RevertInfo & { checkpoint: number }) | null;
}

/** Why an activation failed, with the HTTP status the API should answer. */
export class ActivationError extends CheckpointError {}

/** What importCandidate did: the checkpoint it made (published and served, or rejected and kept), what it read. */
export interface ImportResult {
  checkpoint: CheckpointEntry;
  imported: ImportSummary;
  /** the swap that put it in service; null when the gate rejected it */
  swap: SwapResult | null;
}

/**
 * What the supervisor's parts (runLoop.ts, trainerProcess.ts, serving.ts, publishGate.ts,
 * watchRevert.ts, importCheckpoint.ts) share: the options, the live status and each other.
 */
export interface SupervisorContext {
  readonly o: SupervisorOptions;
  readonly st: TrainingLiveStatus;
  readonly lr: LrPolicy;
  readonly serving: Serving;
  readonly trainer: TrainerProcess;
  readonly loop: RunLoop;
  /** stop() was called */
  readonly stopping: boolean;
  setPhase(p: TrainingPhase): void;
  publishStatus(): void;
  /** Starts reporting a part of a run (status.progress): returns the function that takes its fraction done. */
  track(part: PhaseProgressView["part"]): (fraction: number) => void;
  /** The directory of the checkpoint served now; null for the base model. */
  activeDir(): string | null;
  settings(): TrainSettings;
  /** Runs `fn` once runs, activations, rollbacks and imports before it are done, and holds them off until it is. */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}
