import fs from "node:fs";
import path from "node:path";
import type { EventBus } from "../rollout/events.js";
import { rewardOf, type Store } from "../store/store.js";
import type { Sample } from "../../../trainer/train/samples.js";

/** A trainable sample, named by the turn it came from. */
export interface PoolItem {
  id: string;
  /** the trainer's sample (live form: served token ids and log-probs) */
  sample: Sample;
  reward: number | null;
}

/**
 * What the supervisor needs from the sample pool (electron/core/rollout/samples.ts implements
 * the full one). A claimed sample is not ready; `commit` marks a run's samples as used for
 * good, `release` returns them (the run failed). Claims that were never committed return to
 * the pool after a crash.
 */
export interface SamplePool {
  ready(): PoolItem[];
  claim(ids: readonly string[], runId: string): void;
  commit(runId: string): void;
  release(runId: string): void;
  /** Calls `fn` when the set of ready samples may have changed. Returns an unsubscribe. */
  onChange(fn: () => void): () => void;
}

/**
 * A small pool built on explicit feedback and judge results in the store, used when no other
 * pool is given: a main turn is a sample when it has a reward of ±1 (thumbs override the
 * judge) and/or a hint (the combined method's table). Used ids are appended to
 * training/used.jsonl (fsynced) when a run commits.
 */
export class StoreSamplePool implements SamplePool {
  private readonly used = new Set<string>();
  private readonly claims = new Map<string, string[]>();
  private readonly listeners = new Set<() => void>();
  private readonly file: string;
  private readonly offs: Array<() => void>;

  constructor(
    private readonly store: Store,
    bus: EventBus,
    dataDir: string,
  ) {
    this.file = path.join(dataDir, "training", "used.jsonl");
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    if (fs.existsSync(this.file)) {
      for (const line of fs.readFileSync(this.file, "utf8").split("\n")) {
        try {
          const r = JSON.parse(line) as { ids?: unknown };
          if (Array.isArray(r.ids)) for (const id of r.ids) if (typeof id === "string") this.used.add(id);
        } catch {
          // A torn last line (crash mid-write): its run never committed.
        }
      }
    }
    const notify = () => this.notify();
    this.offs = [bus.on("feedback", notify), bus.on("judge", notify)];
  }

  close(): void {
    for (const off of this.offs) off();
  }

  private notify(): void {
    for (const fn of this.listeners) fn();
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private claimed(): Set<string> {
    return new Set([...this.claims.values()].flat());
  }

  ready(): PoolItem[] {
    const claimed = this.claimed();
    const out: PoolItem[] = [];
    for (const e of this.store.turnEntries()) {
      if (e.type !== "main" || this.used.has(e.turnId) || claimed.has(e.turnId)) continue;
      const r = rewardOf(e);
      const reward = r.reward === 1 || r.reward === -1 ? r.reward : null;
      let hint = e.feedback?.hint ?? null;
      if (!hint && !e.feedback?.thumbs && e.judge) hint = this.store.readJudge(e.turnId)?.hints[0] ?? null;
      if (reward === null && !hint) continue;
      const t = this.store.readTurn(e.turnId);
      if (t.responseTokens.length === 0 || t.promptTokens.length === 0) continue;
      const logprobsOk = t.tokenLogprobs.length === t.responseTokens.length && t.tokenLogprobs.every((x) => Number.isFinite(x) && x <= 0);
      const hasUser = t.messages.some((m) => m.role === "user");
      const sample: Sample = {
        prompt_tokens: t.promptTokens,
        response_tokens: t.responseTokens,
        ...(logprobsOk ? { logprobs: t.tokenLogprobs } : {}),
        ...(reward !== null ? { reward } : {}),
        ...(hint && hasUser ? { hint, messages: t.messages as Sample["messages"] } : {}),
      };
      if (reward === null && !sample.hint) continue;
      out.push({ id: e.turnId, sample, reward });
    }
    return out;
  }

  claim(ids: readonly string[], runId: string): void {
    const claimed = this.claimed();
    const bad = ids.find((id) => this.used.has(id) || claimed.has(id));
    if (bad) throw new Error(`sample ${bad} is already used or claimed`);
    this.claims.set(runId, [...ids]);
    this.notify();
  }

  commit(runId: string): void {
    const ids = this.claims.get(runId);
    if (!ids) return;
    const fd = fs.openSync(this.file, "a");
    try {
      fs.writeSync(fd, `${JSON.stringify({ runId, time: new Date().toISOString(), ids })}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    for (const id of ids) this.used.add(id);
    this.claims.delete(runId);
  }

  release(runId: string): void {
    if (this.claims.delete(runId)) this.notify();
  }
}
