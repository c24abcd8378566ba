import { studentTQuantile } from "../../../common/stats/studentT.js";

/**
 * The fluency probe as a sequential test (issue 31): answers are sampled and scored in rounds,
 * and the probe stops as soon as the full probe's verdict can be predicted, instead of always
 * sampling every answer.
 *
 * Per answer i (a prompt and seed), paired with the base model's own answer to the same prompt
 * and seed: d_i = (base model's mean log-prob per token of the candidate's answer) − (the same of
 * the base model's own answer). The full probe passes a candidate whose pooled figure over all n
 * planned answers is at most `margin` nats/token below the base's. After each round, with
 * k ≥ `minAnswers` pairs, mean d̄ and spread s, the mean the full probe would see is predicted
 * (stochastic curtailment, with a flat prior on the candidate's true mean): the n − k answers not
 * drawn yet average d̄ ± s/√k (where the true mean is) ± s/√(n−k) (their own noise), so the full
 * mean (k·d̄ + (n−k)·D)/n is d̄ with a standard error of s·√((n−k)/(n·k)). With
 * h = t(1−α; k−1)·s·√((n−k)/(n·k)):
 *   - clearly within: d̄ − h > −margin, and the pooled figures so far pass;
 *   - clearly over:   d̄ + h < −margin, and the pooled figures so far fail;
 *   - otherwise the next round runs; after the last round the pooled figures over every answer
 *     decide, exactly as the full probe does.
 * So it stops when the full probe would give the same verdict with probability ≥ 1 − α.
 * docs/method.md ("The fluency probe stops when the verdict is clear") gives the error rates.
 */

/** A sum of log-probs and its token count. */
export interface LogprobSum {
  sum: number;
  n: number;
}

export interface SequentialRule {
  /** the gate's fluency margin (nats/token) */
  margin: number;
  /** fewest paired answers before an early verdict (default 8) */
  minAnswers?: number;
  /** the most probability, predicted from the answers so far, that the full probe's verdict would differ from an early one (default 0.05) */
  alpha?: number;
  /** answers per round (default 8) */
  round?: number;
}

export const SEQUENTIAL_DEFAULTS = { minAnswers: 8, alpha: 0.05, round: 8 } as const;

export type SequentialVerdict = "within" | "over" | "undecided";

/** One answer of the candidate and the base model's own answer to the same prompt and seed, each scored by the base model. */
export interface PairedScore {
  cand: LogprobSum;
  base: LogprobSum;
}

function pooled(xs: readonly LogprobSum[]): number | null {
  const s = xs.reduce((a, x) => ({ sum: a.sum + x.sum, n: a.n + x.n }), { sum: 0, n: 0 });
  return s.n > 0 ? s.sum / s.n : null;
}

/** Whether the answers so far make the full probe's verdict over `planned` answers clear (see the file's comment). */
export function sequentialVerdict(pairs: readonly PairedScore[], rule: SequentialRule, planned: number): SequentialVerdict {
  const minAnswers = rule.minAnswers ?? SEQUENTIAL_DEFAULTS.minAnswers;
  const alpha = rule.alpha ?? SEQUENTIAL_DEFAULTS.alpha;
  const d = pairs.filter((p) => p.cand.n > 0 && p.base.n > 0).map((p) => p.cand.sum / p.cand.n - p.base.sum / p.base.n);
  const k = d.length;
  if (k < Math.max(2, minAnswers)) return "undecided";
  const mean = d.reduce((a, x) => a + x, 0) / k;
  const sd = Math.sqrt(d.reduce((a, x) => a + (x - mean) ** 2, 0) / (k - 1));
  const n = Math.max(planned, k);
  const half = studentTQuantile(1 - alpha, k - 1) * sd * Math.sqrt((n - k) / (n * k));
  const c = pooled(pairs.map((p) => p.cand));
  const b = pooled(pairs.map((p) => p.base));
  if (c === null || b === null) return "undecided";
  const pooledWithin = c >= b - rule.margin;
  if (mean - half > -rule.margin && pooledWithin) return "within";
  if (mean + half < -rule.margin && !pooledWithin) return "over";
  return "undecided";
}

/**
 * Round-robin order over distinct prompts (indices into `keys`): the first round answers every
 * prompt once before any prompt is answered twice, so an early verdict covers the prompts.
 */
export function interleavedOrder(keys: readonly string[]): number[] {
  const groups = new Map<string, number[]>();
  keys.forEach((k, i) => (groups.get(k) ?? groups.set(k, []).get(k)!).push(i));
  const lists = [...groups.values()];
  const out: number[] = [];
  for (let r = 0; out.length < keys.length; r++) for (const l of lists) if (r < l.length) out.push(l[r]);
  return out;
}

/**
 * Runs `round` over `order` in rounds (all at once without a rule), stopping once
 * `sequentialVerdict` is clear. Returns the pairs in the order run and whether it stopped early.
 */
export async function runSequential(
  order: readonly number[],
  rule: SequentialRule | undefined,
  round: (indices: number[]) => Promise<PairedScore[]>,
): Promise<{ pairs: PairedScore[]; ran: number[]; verdict: SequentialVerdict; stoppedEarly: boolean }> {
  const size = rule ? Math.max(1, rule.round ?? SEQUENTIAL_DEFAULTS.round) : Math.max(1, order.length);
  const pairs: PairedScore[] = [];
  const ran: number[] = [];
  let verdict: SequentialVerdict = "undecided";
  for (let at = 0; at < order.length; at += size) {
    const idx = order.slice(at, at + size);
    pairs.push(...(await round(idx)));
    ran.push(...idx);
    if (!rule) continue;
    verdict = sequentialVerdict(pairs, rule, order.length);
    if (verdict !== "undecided" && ran.length < order.length) return { pairs, ran, verdict, stoppedEarly: true };
  }
  return { pairs, ran, verdict, stoppedEarly: false };
}
