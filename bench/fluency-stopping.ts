/**
 * When the gate's fluency probe may stop: answers sampled and the gate's error rates, by simulation,
 * for the full probe (every answer, the baseline), the 3-standard-error bound it used before, and
 * the predictive rule it uses now (sequentialFluency.ts) at several α (issue 31).
 *
 *   node --import tsx bench/fluency-stopping.ts [--candidates 4000]
 *
 * Each simulated candidate has 8 prompts × 4 seeds = 32 paired answers: the base model's per-token
 * log-prob of its own answer, and of the candidate's, which is the base's + the candidate's true
 * drift + noise of 0.2–0.6 nats/token per answer (the gate measured 0.28–0.64 per candidate on
 * stories260K), normal or heavy-tailed (one answer in ten with three times the noise). A false
 * accept publishes a candidate whose true drift is over the 0.4 margin; a false reject turns down
 * one within it. "differs" counts early verdicts unlike the full probe's over the same answers.
 * Rounds of 8 answers, as the gate runs them. A model of the answers, not a measurement of them.
 */
import { parseArgs } from "node:util";
import { runSequential, type PairedScore, type SequentialVerdict } from "../electron/core/inference/sequentialFluency.js";

const { values } = parseArgs({ options: { candidates: { type: "string", default: "4000" } } });
const N = Number(values.candidates);
const MARGIN = 0.4;

/** Deterministic uniform draws (mulberry32). */
function uniforms(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function candidate(drift: number, sd: number, heavy: boolean, seed: number): PairedScore[] {
  const u = uniforms(seed);
  const z = () => Math.sqrt(-2 * Math.log(u() + 1e-12)) * Math.cos(2 * Math.PI * u());
  return Array.from({ length: 32 }, () => {
    const n = 20 + Math.floor(Math.abs(z()) * 20);
    const base = -2 + 0.3 * z();
    const noise = sd * z() * (heavy && u() < 0.1 ? 3 : 1);
    return { base: { sum: base * n, n }, cand: { sum: (base + drift + noise) * n, n } };
  });
}

const pooledWithin = (ps: readonly PairedScore[]): boolean => {
  const sum = (k: "cand" | "base") => ps.reduce((a, p) => a + p[k].sum, 0) / ps.reduce((a, p) => a + p[k].n, 0);
  return sum("cand") >= sum("base") - MARGIN;
};

/** The rule before the predictive one: stop when d̄ is 3 standard errors of the mean so far clear of the margin. */
function threeStandardErrors(ps: readonly PairedScore[]): SequentialVerdict {
  const d = ps.map((p) => p.cand.sum / p.cand.n - p.base.sum / p.base.n);
  const k = d.length;
  const mean = d.reduce((a, x) => a + x, 0) / k;
  const half = (3 * Math.sqrt(d.reduce((a, x) => a + (x - mean) ** 2, 0) / (k - 1))) / Math.sqrt(k);
  if (mean - half > -MARGIN && pooledWithin(ps)) return "within";
  if (mean + half < -MARGIN && !pooledWithin(ps)) return "over";
  return "undecided";
}

type Rule = { name: string; run: (ps: PairedScore[]) => Promise<{ verdict: "within" | "over"; answers: number }> };
const sequential = (alpha: number): Rule => ({
  name: `predictive, α = ${alpha}${alpha === 0.05 ? " (default)" : ""}`,
  run: async (ps) => {
    const r = await runSequential(
      ps.map((_, i) => i),
      { margin: MARGIN, alpha },
      async (idx) => idx.map((i) => ps[i]),
    );
    return { verdict: r.stoppedEarly ? (r.verdict as "within" | "over") : pooledWithin(r.pairs) ? "within" : "over", answers: r.ran.length };
  },
});
const rules: Rule[] = [
  { name: "full probe (baseline)", run: async (ps) => ({ verdict: pooledWithin(ps) ? "within" : "over", answers: ps.length }) },
  {
    name: "3 standard errors (before)",
    run: async (ps) => {
      for (let k = 8; k < ps.length; k += 8) {
        const v = threeStandardErrors(ps.slice(0, k));
        if (v !== "undecided") return { verdict: v, answers: k };
      }
      return { verdict: pooledWithin(ps) ? "within" : "over", answers: ps.length };
    },
  },
  sequential(0.01),
  sequential(0.02),
  sequential(0.05),
];

const populations = [
  { name: "drifts within ±0.5 of the margin", drift: (s: number) => -MARGIN + ((s % 21) - 10) * 0.05 },
  { name: "drifts from 0 to −1.2", drift: (s: number) => -(s % 25) * 0.05 },
];
for (const heavy of [false, true]) {
  for (const pop of populations) {
    console.log(`\n${pop.name}, ${heavy ? "heavy-tailed" : "normal"} noise, ${N} candidates`);
    console.log(`  ${"rule".padEnd(30)} ${"answers".padStart(8)} ${"differs".padStart(8)} ${"false accept".padStart(13)} ${"false reject".padStart(13)}`);
    for (const rule of rules) {
      let answers = 0;
      let differs = 0;
      let over = 0;
      let accepts = 0;
      let rejects = 0;
      for (let s = 0; s < N; s++) {
        const drift = pop.drift(s);
        const ps = candidate(drift, 0.2 + (0.4 * ((s * 7919) % 100)) / 100, heavy, 1000 + s);
        const r = await rule.run(ps);
        answers += r.answers;
        if (r.verdict !== (pooledWithin(ps) ? "within" : "over")) differs++;
        const trulyOver = drift < -MARGIN - 1e-9;
        if (trulyOver) over++;
        if (trulyOver && r.verdict === "within") accepts++;
        if (!trulyOver && r.verdict === "over") rejects++;
      }
      const pct = (x: number, of: number) => `${((100 * x) / Math.max(1, of)).toFixed(2)}%`;
      console.log(
        `  ${rule.name.padEnd(30)} ${(answers / N).toFixed(1).padStart(8)} ${pct(differs, N).padStart(8)} ${pct(accepts, over).padStart(13)} ${pct(rejects, N - over).padStart(13)}`,
      );
    }
  }
}
