import type { LrEvent } from "../store/state.js";
import type { GateResult } from "./gate.js";

/**
 * How many optimizer steps a learning cycle takes, written once (docs/method.md, "Steps per
 * cycle"): the fewest while the gate says no, more while it says yes with room to spare. A
 * published candidate whose drift from the base model (the gate's KL to it on recent prompts and
 * held-back turns) used at most half the drift budget adds a step, up to `max`; one that used more
 * keeps the count. A rejected candidate, a rollback by the watch, a checkpoint served by hand, an
 * import and the loop starting again go back to `min`; a rejected import changes nothing (no run
 * made it).
 *
 * Why: on the stories260K eval, 4 steps a cycle learned twice as much per interaction as 2 for a
 * reader whose candidates the gate always passes (animals), and less for one whose candidates it
 * rejects half the time at 4 (cats: each rejection throws a cycle's feedback away, and there the
 * candidates' drift sits near the budget). The events are the learning-rate policy's (lrPolicy.ts,
 * the store's `training.lrEvents`), so the two read the same history.
 */

/** Steps a cycle takes after a rejection and at the start (the app's default before issue 31's policy). */
export const MIN_STEPS_PER_RUN = 2;
/** Most steps a cycle takes, after enough candidates in a row passed the gate. */
export const MAX_STEPS_PER_RUN = 4;

export interface StepsRange {
  min: number;
  max: number;
}

export const STEPS_RANGE: StepsRange = { min: MIN_STEPS_PER_RUN, max: MAX_STEPS_PER_RUN };

/** Share of the drift budget a published candidate may have used for the next cycle to take a step more. */
export const DRIFT_ROOM = 0.5;

/** Whether a published candidate left room for a longer cycle: its drift at most DRIFT_ROOM of the budget (unknown: no). */
export function leftRoom(gate: Pick<GateResult, "driftBudget" | "klToBase"> | undefined): boolean {
  const d = gate?.klToBase;
  if (!gate?.driftBudget || !d) return false;
  const drift = Math.max(d.recent ?? 0, d.heldBack ?? 0);
  return drift <= DRIFT_ROOM * gate.driftBudget;
}

/** The steps after an event, from the steps before it; `room`: a published candidate left room (leftRoom). */
export function stepsAfter(steps: number, kind: LrEvent["kind"], room: boolean, range: StepsRange = STEPS_RANGE): number {
  switch (kind) {
    case "published":
      return room ? Math.min(steps + 1, range.max) : steps;
    case "importRejected":
      return steps;
    case "rejected":
    case "reverted":
    case "imported":
    case "activated":
    case "restart":
      return range.min;
  }
}

/**
 * The steps the next cycle takes, read from the events (min before any); `gateOf` gives a
 * published checkpoint's gate result (absent, as for a checkpoint retention removed: no room).
 */
export function stepsPerRunOf(
  events: readonly LrEvent[],
  gateOf: (checkpoint: number) => Pick<GateResult, "driftBudget" | "klToBase"> | undefined,
  range: StepsRange = STEPS_RANGE,
): number {
  let steps = range.min;
  for (const ev of events) steps = stepsAfter(steps, ev.kind, ev.kind === "published" && ev.checkpoint !== null && leftRoom(gateOf(ev.checkpoint)), range);
  return steps;
}
