import type { EventBus } from "../../rollout/events.js";
import type { Rollout } from "../../rollout/rollout.js";
import type { Store } from "../../store/store.js";
import type { StatusReply } from "../../api/status.js";
import type { TrainingStatusView } from "../../api/training.js";

/**
 * What the engine reports for GET /api/status. The inference side plugs a provider in; any
 * extra fields it returns are passed through.
 */
export interface EngineStatus {
  /** the served model (id as in /v1/models), null when none is loaded */
  model: (NonNullable<StatusReply["model"]> & { [extra: string]: unknown }) | null;
  /** "cuda" | "vulkan" | "cpu" ... */
  backend: string | null;
  /** GPU name and layers offloaded, when there is one */
  gpu: (NonNullable<StatusReply["gpu"]> & { [extra: string]: unknown }) | null;
  /** adapter version answering now; "base" when none */
  adapter: string;
  [extra: string]: unknown;
}

export type EngineStatusProvider = () => EngineStatus | Promise<EngineStatus>;

export interface ApiDeps {
  store: Store;
  rollout: Rollout;
  bus: EventBus;
  /** absent: status says no model is loaded */
  engineStatus?: EngineStatusProvider;
  /** training supervisor's live status, merged over the stored one */
  trainingStatus?: () => Partial<TrainingStatusView> & { judgeQueue?: number };
  /** SSE keep-alive comment interval (default 15 s) */
  sseKeepAliveMs?: number;
}
