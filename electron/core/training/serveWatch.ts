import type { FluencyMeasure } from "../inference/fluencyProbe.js";
import type { EventBus } from "../rollout/events.js";
import { rewardOf, type Store, type TurnEntry } from "../store/store.js";
import { studentTCdf } from "../../../common/stats/studentT.js";

/**
 * The watch on what is served. After the learning loop puts a checkpoint into service, the
 * turns that checkpoint answers keep being measured against the turns its parent answered:
 *
 * - their rewards: the user's thumbs (±1), else the judge's verdict (−1 / 0 / +1), of the last
 *   `window` rated main turns answered by each;
 * - their fluency: the base model's mean log-prob per token of each of the last `window` main
 *   answers of each (fluencyProbe.ts `score`), when a probe is there.
 *
 * The rule for "clearly worse than its parent", on either measure: at least `minCount` values
 * on each side, the child's mean below the parent's by at least `minDrop` (rewards: 0.25, a
 * quarter of the way from neutral to a thumbs down; fluency: 0.5 nats/token, the eval's limit),
 * and a one-sided Welch t-test of "the child's mean is lower" at p < `alpha` (0.01). When it
 * fires, the supervisor rolls back to the parent (supervisor.ts `revert`).
 *
 * Why these numbers: 8 values are the fewest for which a t-test on ±1 ratings says anything
 * (with 8 and 8, a drop from +0.5 to −0.5 gives p ≈ 0.02 … 0.002 depending on the spread); 20
 * is the window, so the test follows the checkpoint as it is now and old ratings of the parent
 * do not weigh forever. The check runs after every new rating, so the chance of a false alarm
 * over a checkpoint's whole service is several times alpha: alpha is 0.01 rather than 0.05 for
 * that, and the minimum drop keeps a significant but tiny difference from undoing a checkpoint.
 * A checkpoint the user activates by hand is not watched: the user's choice wins.
 */
export interface WatchRule {
  window: number;
  minCount: number;
  alpha: number;
  minRewardDrop: number;
  minFluencyDrop: number;
}

export const WATCH_DEFAULTS: WatchRule = { window: 20, minCount: 8, alpha: 0.01, minRewardDrop: 0.25, minFluencyDrop: 0.5 };

/** The checkpoint being watched and the one it is compared with. */
export interface WatchTarget {
  checkpoint: number;
  version: string;
  /** null: the base model */
  parent: number | null;
  parentVersion: string;
  since: string;
}

export interface SideStats {
  n: number;
  mean: number | null;
}

export interface Comparison {
  child: SideStats;
  parent: SideStats;
  /** child mean − parent mean */
  diff: number | null;
  t: number | null;
  df: number | null;
  /** one-sided p of "the child's mean is lower" */
  p: number | null;
}

export interface WatchFinding {
  rule: "reward" | "fluency";
  reason: string;
  reward: Comparison;
  fluency: Comparison | null;
}

export interface WatchStatus extends WatchTarget {
  reward: Comparison;
  fluency: Comparison | null;
  checkedAt: string | null;
}

// ---- statistics ----

const meanOf = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const varOf = (xs: readonly number[]) => {
  const m = meanOf(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
};

/** One-sided Welch t-test of "mean(child) < mean(parent)". Needs ≥ 2 values on each side. */
export function welchLower(child: readonly number[], parent: readonly number[]): Comparison {
  const side = (xs: readonly number[]): SideStats => ({ n: xs.length, mean: xs.length ? meanOf(xs) : null });
  const out: Comparison = { child: side(child), parent: side(parent), diff: null, t: null, df: null, p: null };
  if (child.length < 2 || parent.length < 2) return out;
  const diff = meanOf(child) - meanOf(parent);
  const vc = varOf(child) / child.length;
  const vp = varOf(parent) / parent.length;
  out.diff = diff;
  if (vc + vp === 0) {
    // No spread on either side: the difference is exact.
    out.p = diff < 0 ? 0 : 1;
    return out;
  }
  const t = diff / Math.sqrt(vc + vp);
  const df = (vc + vp) ** 2 / ((vc > 0 ? vc ** 2 / (child.length - 1) : 0) + (vp > 0 ? vp ** 2 / (parent.length - 1) : 0));
  out.t = t;
  out.df = df;
  out.p = studentTCdf(t, df);
  return out;
}

/** Whether a comparison says "clearly worse": enough values, a drop of at least `minDrop`, p < alpha. */
export function clearlyWorse(c: Comparison, minDrop: number, rule: Pick<WatchRule, "minCount" | "alpha">): boolean {
  return c.child.n >= rule.minCount && c.parent.n >= rule.minCount && c.diff !== null && c.diff <= -minDrop && c.p !== null && c.p < rule.alpha;
}

const signed = (x: number, digits: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(digits)}`;
const pText = (p: number) => (p < 1e-4 ? "< 0.0001" : `= ${p.toPrecision(2)}`);

/** The rule applied to the two measures; null when neither fires. */
export function watchVerdict(reward: Comparison, fluency: Comparison | null, rule: WatchRule = WATCH_DEFAULTS, parentName = "its parent"): WatchFinding | null {
  if (clearlyWorse(reward, rule.minRewardDrop, rule)) {
    return {
      rule: "reward",
      reason:
        `its answers were rated worse than ${parentName}'s: mean reward ${signed(reward.child.mean!, 2)} over its last ${reward.child.n} rated turns vs ` +
        `${signed(reward.parent.mean!, 2)} over ${reward.parent.n} (one-sided Welch t-test p ${pText(reward.p!)} < ${rule.alpha}, drop ≥ ${rule.minRewardDrop})`,
      reward,
      fluency,
    };
  }
  if (fluency && clearlyWorse(fluency, rule.minFluencyDrop, rule)) {
    return {
      rule: "fluency",
      reason:
        `its answers read worse to the base model than ${parentName}'s: ${fluency.child.mean!.toFixed(2)} vs ${fluency.parent.mean!.toFixed(2)} nats/token ` +
        `over ${fluency.child.n} and ${fluency.parent.n} answers (one-sided Welch t-test p ${pText(fluency.p!)} < ${rule.alpha}, drop ≥ ${rule.minFluencyDrop})`,
      reward,
      fluency,
    };
  }
  return null;
}

// ---- the watch ----

export interface ServeWatchOptions {
  store: Store;
  bus: EventBus;
  probe?: FluencyMeasure | null;
  rule?: Partial<WatchRule>;
  /** Called once when the watched checkpoint is found clearly worse (then the watch is disarmed). */
  onRegression(target: WatchTarget, finding: WatchFinding): Promise<void>;
  /** Delay before a check after a new turn or rating, so a burst of events checks once (default 300 ms). */
  debounceMs?: number;
  /** Oldest main turns looked at, newest first, to fill the windows (default 5000). */
  maxScan?: number;
}

export class ServeWatch {
  private target: WatchTarget | null = null;
  private readonly rule: WatchRule;
  private readonly adapters = new Map<string, string>();
  private readonly fluencyCache = new Map<string, number | null>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();
  private last: { reward: Comparison; fluency: Comparison | null; at: string } | null = null;
  private readonly offs: Array<() => void>;
  private closed = false;

  constructor(private readonly o: ServeWatchOptions) {
    this.rule = { ...WATCH_DEFAULTS, ...o.rule };
    const kick = () => this.schedule();
    this.offs = [
      o.bus.on("judge", kick),
      o.bus.on("feedback", kick),
      o.bus.on("turn", (p) => {
        this.adapters.set(p.turn.turnId, p.turn.adapter);
        if (this.target && p.turn.adapter === this.target.version) kick();
      }),
    ];
  }

  arm(target: WatchTarget): void {
    this.target = target;
    this.last = null;
    this.schedule();
  }

  disarm(): void {
    this.target = null;
    this.last = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  get watching(): WatchTarget | null {
    return this.target;
  }

  status(): WatchStatus | null {
    if (!this.target) return null;
    const empty = welchLower([], []);
    return { ...this.target, reward: this.last?.reward ?? empty, fluency: this.last?.fluency ?? null, checkedAt: this.last?.at ?? null };
  }

  private schedule(): void {
    if (!this.target || this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.check().catch((e: Error) => console.warn(`watch on the served adapter: ${e.message}`));
    }, this.o.debounceMs ?? 300);
    this.timer.unref?.();
  }

  private adapterOf(e: TurnEntry): string {
    let a = this.adapters.get(e.turnId);
    if (a === undefined) {
      a = this.o.store.readTurn(e.turnId).adapter;
      this.adapters.set(e.turnId, a);
    }
    return a;
  }

  /** Newest first: the last `window` rated rewards and answered turns of each version. */
  private windows(t: WatchTarget): { child: { rewards: number[]; answers: string[] }; parent: { rewards: number[]; answers: string[] } } {
    const w = this.rule.window;
    const out = { child: { rewards: [] as number[], answers: [] as string[] }, parent: { rewards: [] as number[], answers: [] as string[] } };
    const entries = [...this.o.store.turnEntries()];
    let scanned = 0;
    for (let i = entries.length - 1; i >= 0 && scanned < (this.o.maxScan ?? 5000); i--) {
      const e = entries[i];
      if (e.type !== "main") continue;
      scanned++;
      const full = (s: typeof out.child) => s.rewards.length >= w && s.answers.length >= w;
      if (full(out.child) && full(out.parent)) break;
      const a = this.adapterOf(e);
      const side = a === t.version ? out.child : a === t.parentVersion ? out.parent : null;
      if (!side) continue;
      const r = rewardOf(e).reward;
      if (r !== null && side.rewards.length < w) side.rewards.push(r);
      if (side.answers.length < w) side.answers.push(e.turnId);
    }
    return out;
  }

  private async fluencyOf(ids: string[]): Promise<number[]> {
    const probe = this.o.probe;
    if (!probe) return [];
    const missing = ids.filter((id) => !this.fluencyCache.has(id));
    if (missing.length) {
      const turns = missing.map((id) => this.o.store.readTurn(id));
      const scores = await probe.score(turns.map((t) => ({ prompt: t.promptTokens, response: t.responseTokens })));
      missing.forEach((id, i) => this.fluencyCache.set(id, scores[i]));
    }
    return ids.map((id) => this.fluencyCache.get(id)).filter((x): x is number => typeof x === "number");
  }

  /** Measures now; rolls back (through onRegression) when the rule fires. Returns the finding. */
  check(): Promise<WatchFinding | null> {
    const run = this.running.then(async () => {
      const t = this.target;
      if (!t || this.closed) return null;
      const win = this.windows(t);
      const reward = welchLower(win.child.rewards, win.parent.rewards);
      let fluency: Comparison | null = null;
      // Fluency costs a forward pass per answer: measured once the child has answered enough to judge.
      if (this.o.probe && win.child.answers.length >= this.rule.minCount && win.parent.answers.length >= this.rule.minCount) {
        fluency = welchLower(await this.fluencyOf(win.child.answers), await this.fluencyOf(win.parent.answers));
      }
      if (this.target !== t) return null; // re-armed or disarmed meanwhile
      this.last = { reward, fluency, at: new Date().toISOString() };
      const finding = watchVerdict(reward, fluency, this.rule, t.parent === null ? "the base model" : `checkpoint ${t.parent}`);
      if (!finding) return null;
      this.disarm();
      await this.o.onRegression(t, finding);
      return finding;
    });
    this.running = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.disarm();
    for (const off of this.offs.splice(0)) off();
    await this.running;
  }
}
