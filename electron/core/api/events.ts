/**
 * The SSE events of GET /api/events (`event: <name>`, JSON `data:`): every event of the core's
 * bus (rollout/events.ts CoreEvents, pinned to this list by test/api/contract.typecheck.ts).
 */
export type CoreEventName =
  | "turn"
  | "turnReady"
  | "feedback"
  | "judge"
  | "session"
  | "sessionDeleted"
  | "settings"
  | "download"
  | "models"
  | "status"
  | "training"
  | "checkpoint"
  | "swap"
  | "revert"
  | "preferences";

/** `swap`: an adapter was put into service (checkpoint null: the base model). */
export interface SwapEvent {
  version: string;
  checkpoint: number | null;
  pauseMs: number;
  drained: boolean;
  stragglers: number;
}

/** `revert`: the watch on the served adapter rolled a checkpoint back by itself (to: the one served now; null = base model). */
export interface RevertEvent {
  checkpoint: number;
  to: number | null;
  version: string;
  reason: string;
  rule: string;
  at: string;
}
