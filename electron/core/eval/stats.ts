import { createRng } from "../inference/sampling.js";
/**
 * Confidence intervals for eval scores. Held-out scores come as one row per prompt (its
 * samples × seeds). Answers to the same prompt are correlated, so the prompt is the resampling
 * unit: a percentile bootstrap over prompts (cluster bootstrap), seeded, so a report's interval
 * is reproducible. A normal approximation is offered for comparison and tests.
 */

export interface Interval {
  mean: number;
  lo: number;
  hi: number;
  /** 0.95 for a 95% interval */
  level: number;
  method: "bootstrap-prompts" | "normal";
  /** number of clusters (prompts) or values it was computed from */
  n: number;
}

/** Deterministic PRNG: the same mulberry32 the sampler uses. */
export const rng = createRng;

export function mean(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error("mean of no values");
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Sample standard deviation (n − 1); 0 for a single value. */
export function sd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  let s = 0;
  for (const x of xs) s += (x - m) ** 2;
  return Math.sqrt(s / (xs.length - 1));
}

/** Standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new Error(`quantile needs 0 < p < 1, got ${p}`);
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const lowP = 0.02425;
  if (p < lowP) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lowP) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/** Normal-approximation interval of the mean: mean ± z·sd/√n. */
export function normalInterval(xs: readonly number[], level = 0.95): Interval {
  const m = mean(xs);
  const half = normalQuantile(1 - (1 - level) / 2) * (sd(xs) / Math.sqrt(xs.length));
  return { mean: m, lo: m - half, hi: m + half, level, method: "normal", n: xs.length };
}

/** The q-quantile of sorted values (linear interpolation between order statistics). */
export function quantileSorted(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new Error("quantile of no values");
  const pos = (sorted.length - 1) * q;
  const i = Math.floor(pos);
  const f = pos - i;
  return i + 1 < sorted.length ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

export interface BootstrapOptions {
  level?: number;
  resamples?: number;
  seed?: number;
}

/**
 * Percentile bootstrap of the mean of per-cluster values (one value per prompt: its mean score,
 * or its mean gain in a paired comparison): resample clusters with replacement.
 */
export function bootstrapInterval(clusterValues: readonly number[], o: BootstrapOptions = {}): Interval {
  const level = o.level ?? 0.95;
  const B = o.resamples ?? 2000;
  const n = clusterValues.length;
  const m = mean(clusterValues);
  const r = rng(o.seed ?? 12345);
  const stats = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += clusterValues[Math.floor(r() * n)];
    stats[b] = s / n;
  }
  const sorted = Array.from(stats).sort((x, y) => x - y);
  const alpha = (1 - level) / 2;
  return { mean: m, lo: quantileSorted(sorted, alpha), hi: quantileSorted(sorted, 1 - alpha), level, method: "bootstrap-prompts", n };
}

/** Per-prompt mean scores from rows of scores (one row per prompt: samples × seeds). */
export function promptMeans(rows: readonly (readonly number[])[]): number[] {
  return rows.map((r) => mean(r));
}

/** Interval of a score: cluster bootstrap over prompts. */
export function scoreInterval(rows: readonly (readonly number[])[], o: BootstrapOptions = {}): Interval {
  return bootstrapInterval(promptMeans(rows), o);
}

/**
 * Interval of a gain (method − baseline) on the same prompts: paired, per-prompt differences of
 * mean scores, bootstrapped over prompts. Rows must be in the same prompt order.
 */
export function gainInterval(method: readonly (readonly number[])[], baseline: readonly (readonly number[])[], o: BootstrapOptions = {}): Interval {
  if (method.length !== baseline.length) throw new Error(`paired gain needs the same prompts: ${method.length} vs ${baseline.length} rows`);
  const a = promptMeans(method);
  const b = promptMeans(baseline);
  return bootstrapInterval(
    a.map((x, i) => x - b[i]),
    o,
  );
}

/** "0.465 [0.347, 0.583]"; `signed`: "+0.243 [0.166, 0.319]" (a gain). */
export function formatInterval(i: Pick<Interval, "mean" | "lo" | "hi">, signed = false): string {
  return `${signed && i.mean >= 0 ? "+" : ""}${i.mean.toFixed(3)} [${i.lo.toFixed(3)}, ${i.hi.toFixed(3)}]`;
}
