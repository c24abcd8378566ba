import type { Settings } from "../api/settings.js";
import type { TrainSettings } from "../../../trainer/protocol.js";
import { APP_TRAIN_CONTEXT } from "../../../models/trainVerdict.js";

/**
 * Settings → trainer options: what the supervisor sends the trainer, and what the eval's replay
 * (samplesExport.ts) writes as `clawrl train` flags, so a replay trains with exactly what the
 * loop trained with.
 */

/** The trainer's options from the app's settings (the trainer's `init` message). */
export function trainSettingsOf(s: Settings): TrainSettings {
  return {
    method: s.learningMethod,
    rank: s.loraRank,
    alpha: s.loraAlpha,
    lr: s.learningRate,
    maxContext: s.maxTrainContext ?? APP_TRAIN_CONTEXT,
    teacher: s.teacherSource === "base" ? "base" : "current",
    seed: 0,
    klBeta: s.klBeta,
  };
}

/** One run's batch size: a batch, or what is ready when "Train now" runs on less. */
export function runBatchSize(ready: number, s: Settings): number {
  return Math.min(ready, s.batchSize);
}

/** One run's learning rate: the setting times the policy's current scale. */
export function runLearningRate(s: Settings, lrScale: number): number {
  return s.learningRate * lrScale;
}

/** The learning-rate policy lives in lrPolicy.ts (events in the store, read by the loop and the replay). */
export { halvedLrScale, lrScalesOf, MIN_LR_SCALE, type LrHistoryEntry } from "./lrPolicy.js";
