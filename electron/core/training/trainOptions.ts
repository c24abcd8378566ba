import type { Settings } from "../store/settings.js";
import type { TrainSettings } from "../../../trainer/protocol.js";
import { APP_TRAIN_CONTEXT } from "../../../models/trainVerdict.js";

/**
 * Settings → trainer options, and the learning-rate policy: what the supervisor sends the
 * trainer, and what the eval's replay (samplesExport.ts) writes as `clawrl train` flags, so a
 * replay trains with exactly what the loop trained with.
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

/** Smallest learning-rate scale after repeated halvings (the supervisor's default floor). */
export const MIN_LR_SCALE = 1 / 64;

/**
 * The learning-rate policy: halve the scale after a rejected candidate and after a rollback by
 * the watch (train on from there with a smaller step), down to a floor; a publish (or a
 * checkpoint served by hand) sets it back to 1.
 */
export function halvedLrScale(scale: number, floor = MIN_LR_SCALE): number {
  return Math.max(scale / 2, floor);
}

/** What the policy reads from a checkpoint's history. */
export interface LrHistoryEntry {
  n: number;
  createdAt: string;
  verdict: string;
  reverted?: { at: string } | null;
}

/**
 * The scale each checkpoint's run used, replayed from the checkpoints' history in time order:
 * each rejected candidate and each rollback halves it, anything else (a publish; a reverted
 * checkpoint was published first) resets it to 1.
 */
export function lrScalesOf(history: readonly LrHistoryEntry[], floor = MIN_LR_SCALE): Map<number, number> {
  const events = [
    ...history.map((c) => ({ at: c.createdAt, n: c.n as number | null, halve: c.verdict === "rejected" })),
    ...history.flatMap((c) => (c.reverted ? [{ at: c.reverted.at, n: null, halve: true }] : [])),
  ].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : (a.n ?? Infinity) - (b.n ?? Infinity)));
  const scales = new Map<number, number>();
  let scale = 1;
  for (const ev of events) {
    if (ev.n !== null) scales.set(ev.n, scale);
    scale = ev.halve ? halvedLrScale(scale, floor) : 1;
  }
  return scales;
}
