/** GET /api/status (server/routes/api.ts, core.ts engineStatus). */
import type { TrainingPhase, TrainingStatusView } from "./training.js";

export interface StatusReply {
  /** the served model; null when none is loaded */
  model: { id: string; name?: string; path?: string; contextSize?: number; sizeBytes?: number | null; quantization?: string | null } | null;
  /** inference backend: "cuda" | "vulkan" | "cpu" …; null without a model */
  backend: string | null;
  /** the GPU's name and the layers offloaded to it; null on the CPU */
  gpu: { name?: string; layers?: number } | null;
  /** adapter version answering now; "base" when none */
  adapter: string;
  /**
   * The learning loop's live status with the judge's queue, over the stored one (store/state.ts:
   * only that when learning is off, whose state may also be "waiting").
   */
  training: Omit<Partial<TrainingStatusView>, "state"> & { state: TrainingPhase | "waiting"; activeCheckpoint: number | null; judgeQueue?: number };
  sessions: number;
  turns: number;
  /** what the store recovered from at start, if anything */
  recovery: string | null;
}

/** `status` event: only a cue to read GET /api/status again, with what changed: the adapter served, or the judge's queue. */
export type StatusEvent = { adapter: string } | { judgeQueue: number };
