import { EventEmitter } from "node:events";
import type { FeedbackState } from "../store/store.js";
import type { SessionMeta } from "../store/state.js";
import type { Settings } from "../store/settings.js";
import type { TurnType } from "../store/records.js";
import type { PreferenceEvent } from "../preferences/service.js";
import type { RevertEvent, SwapEvent } from "../api/events.js";
import type { TrainingStatusView } from "../api/training.js";

/** A completed turn, small enough to send to every SSE client. */
export interface TurnSummary {
  turnId: string;
  sessionId: string;
  index: number;
  type: TurnType;
  time: string;
  adapter: string;
  finishReason: string;
  responseTokenCount: number;
  text: string;
}

/**
 * The core's in-process events (their names and the UI's payloads are the contract in
 * api/events.ts; test/api/contract.typecheck.ts keeps the two the same). The SSE route forwards all of them; the learning loop
 * subscribes to `turnReady` (a main turn got its next state: judge it) and `feedback`.
 */
export interface CoreEvents {
  turn: { turn: TurnSummary };
  turnReady: { turnId: string; sessionId: string };
  feedback: { turnId: string; sessionId: string; feedback: FeedbackState | null };
  judge: { turnId: string; sessionId: string; reward: -1 | 0 | 1 };
  session: { session: SessionMeta; change: "created" | "updated" | "renamed" | "closed" | "reopened" };
  sessionDeleted: { sessionId: string };
  settings: { settings: Settings };
  /** model downloads (progress, paused, done, failed, cancelled) and model-list changes */
  download: Record<string, unknown>;
  models: Record<string, unknown>;
  /** engine / adapter / training changes, published by whoever owns them */
  status: Record<string, unknown>;
  /** learning loop (electron/core/training): live training status, a new checkpoint, an adapter swap */
  training: { training: TrainingStatusView };
  checkpoint: { checkpoint: Record<string, unknown> };
  /** checkpoint null: the base model */
  swap: SwapEvent;
  /** the watch on the served adapter rolled a checkpoint back by itself (to: the one served now; null = base model) */
  revert: RevertEvent;
  /** a preference was created, edited, changed status (by the user or the loop), deleted, restored or checked */
  preferences: PreferenceEvent;
}
export type CoreEventName = keyof CoreEvents;

export class EventBus {
  private readonly ee = new EventEmitter();

  constructor() {
    // SSE clients each add a listener; many browser tabs are normal.
    this.ee.setMaxListeners(0);
  }

  on<K extends CoreEventName>(name: K, fn: (payload: CoreEvents[K]) => void): () => void {
    this.ee.on(name, fn);
    return () => this.ee.off(name, fn);
  }

  /** Every event, with its name (SSE). */
  onAny(fn: <K extends CoreEventName>(name: K, payload: CoreEvents[K]) => void): () => void {
    const h = (name: CoreEventName, payload: unknown) => fn(name, payload as CoreEvents[typeof name]);
    this.ee.on("*", h);
    return () => this.ee.off("*", h);
  }

  /** Delivers synchronously; a listener that throws is reported and does not stop the others or the emitter. */
  emit<K extends CoreEventName>(name: K, payload: CoreEvents[K]): void {
    for (const [ev, args] of [[name, [payload]], ["*", [name, payload]]] as const) {
      for (const l of this.ee.listeners(ev)) {
        try {
          (l as (...a: unknown[]) => void)(...args);
        } catch (err) {
          console.error(`event listener for '${name}' failed: ${(err as Error).message}`);
        }
      }
    }
  }
}
