/**
 * The fluency probe as a sequential test (issue 31, electron/core/inference/sequentialFluency.ts):
 * a clear pass and a clear fail stop early with the full probe's verdict, a candidate at the margin
 * runs every answer, and over many simulated candidates near the margin an early verdict rarely
 * differs from the full probe's and the gate's errors (against the candidates' true drift) stay
 * those of the full probe.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { interleavedOrder, runSequential, sequentialVerdict, type PairedScore } from "../../electron/core/inference/sequentialFluency.js";

/** Deterministic normal draws (mulberry32 + Box-Muller). */
function normals(seed: number): () => number {
  let a = seed >>> 0;
  const u = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u() + 1e-12)) * Math.cos(2 * Math.PI * u());
}

/** 32 paired answers (8 prompts × 4 seeds): the candidate's per-token log-prob is the base's + drift ± sd. */
function candidate(drift: number, sd: number, seed: number): PairedScore[] {
  const z = normals(seed);
  return Array.from({ length: 32 }, () => {
    const n = 20 + Math.floor(Math.abs(z()) * 20);
    const base = -2 + 0.3 * z();
    return { base: { sum: base * n, n }, cand: { sum: (base + drift + sd * z()) * n, n } };
  });
}

/** The full probe's verdict: pooled over every answer, the candidate at most `margin` below the base. */
function fullVerdict(pairs: PairedScore[], margin: number): "within" | "over" {
  const pool = (k: "cand" | "base") => pairs.reduce((a, p) => a + p[k].sum, 0) / pairs.reduce((a, p) => a + p[k].n, 0);
  return pool("cand") >= pool("base") - margin ? "within" : "over";
}

async function run(pairs: PairedScore[], margin = 0.4) {
  let rounds = 0;
  const r = await runSequential(
    pairs.map((_, i) => i),
    { margin },
    async (idx) => {
      rounds++;
      return idx.map((i) => pairs[i]);
    },
  );
  return { ...r, rounds };
}

describe("the fluency probe's sequential test", () => {
  test("a clear pass stops after the first round of 8 answers, with the full probe's verdict", async () => {
    const pairs = candidate(-0.05, 0.15, 1);
    const r = await run(pairs);
    assert.equal(r.verdict, "within");
    assert.equal(r.stoppedEarly, true);
    assert.equal(r.ran.length, 8);
    assert.equal(fullVerdict(pairs, 0.4), "within");
  });

  test("a clear fail stops early, with the full probe's verdict", async () => {
    const pairs = candidate(-1.3, 0.3, 2);
    const r = await run(pairs);
    assert.equal(r.verdict, "over");
    assert.equal(r.stoppedEarly, true);
    assert.ok(r.ran.length <= 16, `stopped after ${r.ran.length}`);
    assert.equal(fullVerdict(pairs, 0.4), "over");
  });

  test("a candidate exactly at the margin runs every answer (the pooled figures decide, as before)", async () => {
    // d_i alternate −0.4 ± 0.3: the mean sits on the margin at every look, so no prediction is clear.
    const pairs = Array.from({ length: 32 }, (_, i) => ({ base: { sum: -2 * 20, n: 20 }, cand: { sum: (-2.4 + (i % 2 ? 0.3 : -0.3)) * 20, n: 20 } }));
    const r = await run(pairs);
    assert.equal(r.stoppedEarly, false);
    assert.equal(r.ran.length, 32);
    assert.equal(r.rounds, 4);
  });

  test("a candidate 0.16 below the base with 0.35 spread stops at 8 answers (a bound of 3 standard errors was not clear there)", async () => {
    // The 0.5B cycle's borderline candidate (docs/hardware/cpu-2core/cycle/after-edc167d-think10.txt).
    const pairs = Array.from({ length: 32 }, (_, i) => ({ base: { sum: -10 * 24, n: 24 }, cand: { sum: (-10.16 + (i % 2 ? 0.35 : -0.35)) * 24, n: 24 } }));
    const r = await run(pairs);
    assert.equal(r.verdict, "within");
    assert.equal(r.ran.length, 8);
    // The same answers against a bound of 3 standard errors of the mean so far: not clear at 8.
    const d = pairs.slice(0, 8).map((p) => p.cand.sum / p.cand.n - p.base.sum / p.base.n);
    const m = d.reduce((a, x) => a + x, 0) / 8;
    const s = Math.sqrt(d.reduce((a, x) => a + (x - m) ** 2, 0) / 7);
    assert.ok(m - (3 * s) / Math.sqrt(8) < -0.4);
  });

  test("without a rule every answer runs in one round; fewer than 8 answers never decide", async () => {
    const pairs = candidate(-0.05, 0.15, 4);
    const r = await runSequential(
      pairs.map((_, i) => i),
      undefined,
      async (idx) => idx.map((i) => pairs[i]),
    );
    assert.equal(r.ran.length, 32);
    assert.equal(r.stoppedEarly, false);
    assert.equal(sequentialVerdict(pairs.slice(0, 7), { margin: 0.4 }, 32), "undecided");
    // Empty answers (no token) do not count as pairs.
    const empty = pairs.slice(0, 8).map((p) => ({ ...p, cand: { sum: 0, n: 0 } }));
    assert.equal(sequentialVerdict(empty, { margin: 0.4 }, 32), "undecided");
  });

  test("round-robin over prompts: the first round answers each prompt once", () => {
    const keys = ["a", "a", "a", "b", "b", "b", "c", "c", "c"];
    assert.deepEqual(interleavedOrder(keys), [0, 3, 6, 1, 4, 7, 2, 5, 8]);
    assert.deepEqual(interleavedOrder(["x", "y", "x"]), [0, 1, 2]);
  });

  test("over 2,000 simulated candidates near the margin, early verdicts rarely differ from the full probe's and the gate's error rates stay the full probe's", async () => {
    let early = 0;
    let flipped = 0;
    let answers = 0;
    // Against each candidate's true drift: published while over the margin, rejected while within.
    const errors = { full: { accept: 0, reject: 0 }, sequential: { accept: 0, reject: 0 } };
    let over = 0;
    const N = 2000;
    for (let s = 0; s < N; s++) {
      // Drifts spread over the margin's neighbourhood, sd per answer 0.2–0.6 (the gate measured 0.28–0.64 per candidate).
      const drift = -0.4 + ((s % 21) - 10) * 0.05;
      const pairs = candidate(drift, 0.2 + (0.4 * ((s * 7919) % 100)) / 100, 1000 + s);
      const r = await run(pairs);
      const full = fullVerdict(pairs, 0.4);
      const trulyOver = drift < -0.4 - 1e-9;
      if (trulyOver) over++;
      for (const [k, v] of [
        ["full", full],
        ["sequential", r.verdict],
      ] as const) {
        if (trulyOver && v === "within") errors[k].accept++;
        if (!trulyOver && v === "over") errors[k].reject++;
      }
      answers += r.ran.length;
      if (!r.stoppedEarly) continue;
      early++;
      if (r.verdict !== full) flipped++;
    }
    const rate = (x: number, of: number) => (100 * x) / of;
    const fa = { full: rate(errors.full.accept, over), sequential: rate(errors.sequential.accept, over) };
    const fr = { full: rate(errors.full.reject, N - over), sequential: rate(errors.sequential.reject, N - over) };
    console.log(
      `simulated: ${early} of ${N} stopped early, ${flipped} differ from the full probe, ${(answers / N).toFixed(1)} answers on average (32 before); ` +
        `false accepts ${fa.sequential.toFixed(2)}% (full probe ${fa.full.toFixed(2)}%), false rejects ${fr.sequential.toFixed(2)}% (full probe ${fr.full.toFixed(2)}%)`,
    );
    assert.ok(early > N / 2, `stops early often (${early} of ${N})`);
    assert.ok(answers / N < 16, `${(answers / N).toFixed(1)} answers on average`);
    assert.ok(flipped / N < 0.02, `${flipped} of ${N} early verdicts differ from the full probe's`);
    assert.ok(fa.sequential <= fa.full + 1, `false accepts ${fa.sequential.toFixed(2)}% vs the full probe's ${fa.full.toFixed(2)}%`);
    assert.ok(fr.sequential <= fr.full + 1, `false rejects ${fr.sequential.toFixed(2)}% vs the full probe's ${fr.full.toFixed(2)}%`);
  });
});
