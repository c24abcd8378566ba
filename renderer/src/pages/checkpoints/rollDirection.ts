import type { CheckpointView } from "../../../../electron/core/api/training.js";

/**
 * Only a checkpoint the gate published can be served (the core refuses the others with 409); one
 * the learner rolled back by itself can be served again by hand (then it is not watched).
 */
export function usable(c: CheckpointView): boolean {
  return /pass|publish|accept|revert/i.test(c.verdict);
}

/**
 * Whether serving `target` moves forward from what serves now: any checkpoint is ahead of the
 * base model, and a checkpoint is ahead of an older one; the base model is always behind.
 */
export function isForward(target: CheckpointView | "base", activeN: number | null): boolean {
  return target !== "base" && (activeN === null || target.n > activeN);
}
