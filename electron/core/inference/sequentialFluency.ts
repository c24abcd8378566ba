/**
 * The fluency probe as a sequential test (issue 31): answers are sampled and scored in rounds,
 * and the probe stops as soon as the verdict is clear instead of always sampling every answer.
 *
 * Per answer i (a prompt and seed), paired with the base model's own answer to the same prompt
 * and seed: d_i = (base model's mean log-prob per token of the candidate's answer) − (the same of
 * the base model's own answer). The gate passes a candidate whose pooled figure is at most
 * `margin` nats/token below the base's. After each round, with k ≥ `minAnswers` pairs, mean d̄
 * and standard error s/√k:
 *   - clearly within: d̄ − z·s/√k > −margin, and the pooled figures so far pass;
 *   - clearly over:   d̄ + z·s/√k < −margin, and the pooled figures so far fail;
 *   - otherwise the next round runs; after the last round the pooled figures over every answer
 *     decide, exactly as the full probe does.
 * docs/method.md ("The fluency probe stops when the verdict is clear") reasons about the error rates.
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
  /** width of the bound in standard errors (default 3) */
  z?: number;
  /** answers per round (default 8) */
  round?: number;
}

export const SEQUENTIAL_DEFAULTS = { minAnswers: 8, z: 3, round: 8 } as const;

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

/** Whether the answers so far make the verdict clear (see the file's comment). */
export function sequentialVerdict(pairs: readonly PairedScore[], rule: SequentialRule): SequentialVerdict {
  const minAnswers = rule.minAnswers ?? SEQUENTIAL_DEFAULTS.minAnswers;
  const z = rule.z ?? SEQUENTIAL_DEFAULTS.z;
  const d = pairs.filter((p) => p.cand.n > 0 && p.base.n > 0).map((p) => p.cand.sum / p.cand.n - p.base.sum / p.base.n);
  const k = d.length;
  if (k < Math.max(2, minAnswers)) return "undecided";
  const mean = d.reduce((a, x) => a + x, 0) / k;
  const sd = Math.sqrt(d.reduce((a, x) => a + (x - mean) ** 2, 0) / (k - 1));
  const half = (z * sd) / Math.sqrt(k);
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
    verdict = sequentialVerdict(pairs, rule);
    if (verdict !== "undecided" && ran.length < order.length) return { pairs, ran, verdict, stoppedEarly: true };
  }
  return { pairs, ran, verdict, stoppedEarly: false };
}
