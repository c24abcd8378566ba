// The learner's status as the pages show it: GET /api/training's `training`, or /api/status's
// (the stored status alone when learning is off: its live fields are then absent).
import type { StatusReply } from "../../../electron/core/api/status.js";
import type { MemoryPlanView, TrainingReply } from "../../../electron/core/api/training.js";
import type { TrainabilityView } from "../../../electron/core/api/models.js";
import { finite } from "./time.js";

/** Either reply's learner status. */
export type LearnerView = StatusReply["training"] | TrainingReply["training"];

/** Paused by the user, or the loop's state says so. */
export const isPaused = (t: LearnerView): boolean => t.paused === true || t.state === "paused";

/** Turns waiting for the judge; null without a judge (or not said). */
export const judgeQueueOf = (t: LearnerView): number | null => finite(t.judgeQueue);

/** How long new requests waited at the last adapter swap, in ms; null before any. */
export const lastSwapMs = (t: LearnerView): number | null => finite(t.lastSwap?.pauseMs);

/** The trainer's memory plan with a missing device figure as null (what memoryNeed reads). */
export function memoryNeedOf(m: MemoryPlanView): Omit<MemoryPlanView, "availableDeviceBytes"> & { availableDeviceBytes: number | null } {
  return { ...m, availableDeviceBytes: finite(m.availableDeviceBytes) };
}

/** The served model's verdict from the trainer's own, live plan (/api/status training.memory). */
export function trainabilityOfMemory(m: MemoryPlanView, backend: string): TrainabilityView {
  return {
    fits: m.fits,
    backend,
    maxContext: m.fits ? m.maxContext : 0,
    summary: m.summary,
    limit: m.fits ? null : "memory",
    weights: null,
    needDeviceBytes: m.needDeviceBytes,
    availableDeviceBytes: finite(m.availableDeviceBytes),
    needHostBytes: m.needHostBytes,
    availableHostBytes: m.availableHostBytes,
  };
}
