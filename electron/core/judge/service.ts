import type { EventBus } from "../rollout/events.js";
import type { JudgeSource } from "../api/settings.js";
import type { Store } from "../store/store.js";
import type { JudgeBackend } from "./backends.js";
import { judgeTurn, type JudgeOptions } from "./judge.js";

export type BackendFactory = (source: JudgeSource, votes: number) => Promise<JudgeBackend>;

export interface JudgeServiceOptions {
  store: Store;
  bus: EventBus;
  /** builds the judge for the settings' source; kept until the source or vote count changes */
  backendFor: BackendFactory;
  /** fixed judge options (tests: seed, maxTokens); votes and temperature come from the settings */
  judge?: Omit<JudgeOptions, "votes" | "temperature" | "signal">;
  /** called with a one-line message when an evaluation fails (default console.warn) */
  warn?: (message: string) => void;
}

/**
 * The background judge: main turns that got their next state (`turnReady`) are judged one at a
 * time, off the request path (serving never waits). Each evaluation, with every vote and raw
 * text, is appended to the trajectories log and announced as `judge`.
 *
 * Explicit feedback: a turn that already has thumbs when its turn comes is not judged (thumbs
 * override the judge's reward, and with thumbs the sample pool ignores judge hints, so the
 * evaluation would change nothing). A turn with only an explicit hint is judged: its reward
 * still counts. Turns left unjudged by a crash or a judge failure are queued again on start.
 */
export class JudgeService {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private running: string | null = null;
  private worker: Promise<void> | null = null;
  private backend: { key: string; judge: JudgeBackend } | null = null;
  private readonly offs: Array<() => void> = [];
  private readonly abort = new AbortController();
  private closed = false;
  private readonly warn: (m: string) => void;

  constructor(private readonly opts: JudgeServiceOptions) {
    this.warn = opts.warn ?? ((m) => console.warn(m));
  }

  /** Subscribes to the bus and queues the backlog (turns with a next state and no judgement). */
  start(): void {
    const { store, bus } = this.opts;
    this.offs.push(bus.on("turnReady", ({ turnId }) => this.enqueue(turnId)));
    for (const e of store.turnEntries()) if (this.needsJudge(e.turnId)) this.enqueue(e.turnId);
  }

  /** Turns waiting or being judged (the UI's "judge queue"). */
  get queueLength(): number {
    return this.queue.length + (this.running ? 1 : 0);
  }

  private needsJudge(turnId: string): boolean {
    const e = this.opts.store.turnEntry(turnId);
    return !!e && e.type === "main" && e.nextState !== null && e.judge === null && !e.feedback?.thumbs;
  }

  enqueue(turnId: string): void {
    if (this.closed || this.queued.has(turnId) || this.running === turnId) return;
    this.queue.push(turnId);
    this.queued.add(turnId);
    this.publish();
    this.worker ??= this.drain().finally(() => {
      this.worker = null;
      this.publish();
    });
  }

  /** Resolves when the queue is empty (tests, shutdown). */
  async whenIdle(): Promise<void> {
    while (this.worker) await this.worker;
  }

  private publish(): void {
    this.opts.bus.emit("status", { judgeQueue: this.queueLength });
  }

  private async drain(): Promise<void> {
    for (let id = this.queue.shift(); id !== undefined && !this.closed; id = this.queue.shift()) {
      this.queued.delete(id);
      this.running = id;
      try {
        await this.judgeOne(id);
      } catch (err) {
        if (!this.closed) this.warn(`judge: turn ${id} not judged: ${(err as Error).message}`);
      } finally {
        this.running = null;
      }
    }
  }

  private async currentBackend(): Promise<JudgeBackend> {
    const s = this.opts.store.settings;
    const key = JSON.stringify([s.judgeSource, s.judgeVotes]);
    if (this.backend?.key === key) return this.backend.judge;
    const old = this.backend;
    this.backend = null;
    await old?.judge.close();
    const judge = await this.opts.backendFor(s.judgeSource, s.judgeVotes);
    this.backend = { key, judge };
    return judge;
  }

  private async judgeOne(turnId: string): Promise<void> {
    const { store, bus } = this.opts;
    if (!this.needsJudge(turnId)) return;
    const turn = store.readTurn(turnId);
    const nextState = store.readNextState(turnId) ?? [];
    const backend = await this.currentBackend();
    const settings = store.settings;
    const outcome = await judgeTurn(
      backend,
      { context: turn.messages, answer: turn.text, toolCalls: turn.toolCalls, nextState },
      // An explicit hint, or the user's rewrite of the answer (its hint is the edit: samples.ts), overrides the judge's: hint extraction would be wasted.
      {
        hints: !store.turnEntry(turnId)?.feedback?.hint && !store.turnEntry(turnId)?.answerEdit,
        ...this.opts.judge,
        votes: settings.judgeVotes,
        temperature: settings.judgeTemperature,
        signal: this.abort.signal,
      },
    );
    // The session may have been deleted, or thumbs given, while the judge ran.
    const e = store.turnEntry(turnId);
    if (!e || this.closed) return;
    store.appendJudge({ turnId, ...outcome });
    bus.emit("judge", { turnId, sessionId: e.sessionId, reward: outcome.reward });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const off of this.offs.splice(0)) off();
    this.queue.length = 0;
    this.queued.clear();
    this.abort.abort();
    await this.worker?.catch(() => undefined);
    await this.backend?.judge.close();
    this.backend = null;
  }
}
