import { EventEmitter } from "node:events";
import type { CoreEventName, CoreEvents } from "../api/events.js";

/**
 * The core's in-process events: their names and payloads are the contract (api/events.ts), so
 * what is emitted is what the UI reads. The SSE route forwards all of them.
 */
export type { CoreEventName, CoreEvents, TurnSummary } from "../api/events.js";

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
    for (const [ev, args] of [
      [name, [payload]],
      ["*", [name, payload]],
    ] as const) {
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
