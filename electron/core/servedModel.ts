import { ConflictError, UnavailableError } from "./domainErrors.js";
import type { EventBus } from "./rollout/events.js";
import type { ModelSwitchEvent } from "./api/models.js";

/** Where a model switch is: the UI shows it in the chat header's picker. */
export interface ModelSwitchState {
  /** the installed model's id being loaded */
  id: string;
  name: string;
  state: "draining" | "loading";
  /** share of the weights loaded (0 to 1) while loading; null before */
  progress: number | null;
  startedAt: string;
}

/** The parts of the core that belong to one served model: rebuilt together when the model changes. */
export interface ServedParts<E> {
  engine: E;
  close(): Promise<void>;
}

export interface ServedModelOptions<E, P extends ServedParts<E>> {
  bus: EventBus;
  /** Loads a model and everything built on it (engine, judge, trainer); `restoring`: the model served before a failed switch. */
  bringUp(modelPath: string, restoring: boolean, onProgress?: (fraction: number) => void): Promise<P>;
  /** Requests being generated or waiting on the engine; a switch waits for them (bounded). */
  busy(engine: E): boolean;
  /** The path the engine serves. */
  pathOf(engine: E): string;
  /** How long a switch waits for in-flight answers before it closes the engine anyway. */
  drainTimeoutMs?: number;
}

/**
 * The model the core serves, switchable while it runs. Routes are registered once, so they
 * reach the engine through `current()` (or a `forwarder`), which answers 503 while a switch is
 * under way. A switch waits for answers in flight (bounded), closes the old model and all that
 * was built on it, loads the new one, and puts the old one back if the new one fails to load.
 */
export class ServedModel<E, P extends ServedParts<E>> {
  private parts: P | null;
  private switching: ModelSwitchState | null = null;
  /** the switch under way, awaited by close() so nothing it loads outlives the core */
  private pending: Promise<void> | null = null;

  constructor(
    initial: P | null,
    private readonly o: ServedModelOptions<E, P>,
  ) {
    this.parts = initial;
  }

  /** The parts serving now; null when no model is loaded or while one is switching. */
  get now(): P | null {
    return this.switching ? null : this.parts;
  }

  /** The parts last brought up, even while a switch closes them (for holders that outlive a switch: tests, shutdown). */
  get latest(): P | null {
    return this.parts;
  }

  /**
   * Resolves when no switch is under way (at once when none is), or after `maxMs`: a request
   * that arrives during a switch waits for the new model instead of failing.
   */
  async settled(maxMs: number): Promise<void> {
    if (!this.switching || !this.pending) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.pending, new Promise<void>((r) => (timer = setTimeout(r, maxMs)))]);
    clearTimeout(timer);
  }

  /** What a switch is doing, or null. */
  get switchState(): ModelSwitchState | null {
    return this.switching;
  }

  /** The parts serving now; a 503 with a readable reason while a switch is under way. */
  current(): P {
    if (this.switching)
      throw new UnavailableError(`The model is being switched to ${this.switching.name}; try again in a moment.`, { code: "model_switching" });
    if (!this.parts) throw new UnavailableError("No model is loaded.", { code: "no_model" });
    return this.parts;
  }

  /**
   * Serves another model file. Resolves when it answers; rejects (after restoring the previous
   * model) when it cannot be loaded. One switch at a time: a second one gets 409.
   */
  switchTo(target: { id: string; name: string; path: string }): Promise<void> {
    if (this.switching) return Promise.reject(new ConflictError(`A switch to ${this.switching.name} is under way.`, { code: "model_switching" }));
    const run = this.runSwitch(target, false);
    this.pending = run.catch(() => undefined);
    return run;
  }

  /**
   * Loads the model serving now again (its load settings changed), as a switch does: answers in
   * flight finish first, requests meanwhile wait, and when it fails to load the previous model
   * comes back (bringUp's `restoring`: with what it loaded with before). 409 during a switch.
   */
  reload(target: { id: string; name: string }): Promise<void> {
    if (this.switching) return Promise.reject(new ConflictError(`A switch to ${this.switching.name} is under way.`, { code: "model_switching" }));
    if (!this.parts) return Promise.reject(new UnavailableError("No model is loaded.", { code: "no_model" }));
    const run = this.runSwitch({ ...target, path: this.o.pathOf(this.parts.engine) }, true);
    this.pending = run.catch(() => undefined);
    return run;
  }

  private async runSwitch(target: { id: string; name: string; path: string }, force: boolean): Promise<void> {
    const old = this.parts;
    const oldPath = old ? this.o.pathOf(old.engine) : null;
    if (oldPath === target.path && !force) return;
    const emit = (state: ModelSwitchEvent["state"], extra: Pick<ModelSwitchEvent, "progress" | "error"> = {}) =>
      this.o.bus.emit("models", { change: "switch", state, id: target.id, name: target.name, ...extra });
    this.switching = { id: target.id, name: target.name, state: "draining", progress: null, startedAt: new Date().toISOString() };
    emit("draining");
    try {
      if (old) {
        const deadline = Date.now() + (this.o.drainTimeoutMs ?? 30_000);
        while (this.o.busy(old.engine) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        await old.close();
        this.parts = null;
      }
      this.switching = { ...this.switching, state: "loading" };
      emit("loading");
      // Progress events at most every 5 % (a large model reports often).
      let shown = 0;
      const onProgress = (f: number) => {
        if (this.switching) this.switching.progress = f;
        if (f - shown >= 0.05 || (f >= 1 && shown < 1)) {
          shown = f;
          emit("loading", { progress: Math.round(f * 100) / 100 });
        }
      };
      try {
        this.parts = await this.o.bringUp(target.path, false, onProgress);
      } catch (err) {
        // Put the previous model back so the app keeps answering; say why the new one failed.
        if (oldPath) this.parts = await this.o.bringUp(oldPath, true).catch(() => null);
        throw err;
      }
      this.switching = null;
      emit("ready");
    } catch (err) {
      this.switching = null;
      emit("failed", { error: (err as Error).message });
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.pending;
    await this.parts?.close();
    this.parts = null;
  }
}

/**
 * An object that forwards each property to what `get()` returns at that moment (methods bound
 * to it), so something handed out once (to a route, the judge) follows a model switch.
 */
export function forwarder<T extends object>(get: () => T): T {
  return new Proxy({} as T, {
    get(_t, key) {
      const target = get();
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
    has: (_t, key) => Reflect.has(get(), key),
  });
}
