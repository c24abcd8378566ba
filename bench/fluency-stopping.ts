/**
 * When the gate's fluency probe may stop: answers sampled and the gate's error rates for the full
 * probe (every answer, the baseline), the 3-standard-error bound it used before, and the
 * predictive rule it uses now (sequentialFluency.ts) at several α (issue 31), by simulation, and
 * with `--real` on real candidates.
 *
 *   node --import tsx bench/fluency-stopping.ts [--candidates 4000]
 *   node --import tsx bench/fluency-stopping.ts --real [--magnitudes 0.1,0.15,0.2] [--seeds 8] [--answers 36]
 *
 * Simulated: each candidate has 8 prompts × 4 seeds = 32 paired answers: the base model's
 * per-token log-prob of its own answer, and of the candidate's, which is the base's + the
 * candidate's true drift + noise of 0.2–0.6 nats/token per answer (the gate measured 0.28–0.64 per
 * candidate on stories260K), normal or heavy-tailed (one answer in ten with three times the noise).
 * A model of the answers, not a measurement of them.
 *
 * Real (`--real`): random LoRA adapters on stories260K (test/inference/loraFixture.ts, each
 * magnitude × seed), judged by the app's FluencyProbe on 8 story prompts × `--answers` seeds
 * (temperature 1, ≤ 48 tokens). The gate's 32 answers are the first 4 seeds of each prompt, in the
 * order the gate samples them; the candidate's true drift is estimated from the others (`--answers` − 4 per prompt).
 *
 * A false accept publishes a candidate whose true drift is over the 0.4 margin; a false reject
 * turns down one within it. "differs" counts verdicts unlike the full probe's over the same
 * answers. Rounds of 8 answers, as the gate runs them.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { getLlama } from "node-llama-cpp";
import { FluencyProbe, type ProbePrompt } from "../electron/core/inference/fluencyProbe.js";
import { createRng } from "../electron/core/inference/sampling.js";
import { interleavedOrder, runSequential, type PairedScore, type SequentialVerdict } from "../electron/core/inference/sequentialFluency.js";
import { writeLoraAdapter } from "../test/inference/loraFixture.js";

const { values } = parseArgs({
  options: {
    candidates: { type: "string", default: "4000" },
    real: { type: "boolean", default: false },
    magnitudes: { type: "string", default: "0.1,0.15,0.2,0.25,0.3,0.4" },
    seeds: { type: "string", default: "8" },
    answers: { type: "string", default: "36" },
  },
});
const N = Number(values.candidates);
const MARGIN = 0.4;

function candidate(drift: number, sd: number, heavy: boolean, seed: number): PairedScore[] {
  const u = createRng(seed);
  const z = () => Math.sqrt(-2 * Math.log(u() + 1e-12)) * Math.cos(2 * Math.PI * u());
  return Array.from({ length: 32 }, () => {
    const n = 20 + Math.floor(Math.abs(z()) * 20);
    const base = -2 + 0.3 * z();
    const noise = sd * z() * (heavy && u() < 0.1 ? 3 : 1);
    return { base: { sum: base * n, n }, cand: { sum: (base + drift + noise) * n, n } };
  });
}

/** The candidate's pooled log-prob per token minus the base's, over these answers. */
const pooledDrift = (ps: readonly PairedScore[]): number => {
  const pool = (k: "cand" | "base") => ps.reduce((a, p) => a + p[k].sum, 0) / ps.reduce((a, p) => a + p[k].n, 0);
  return pool("cand") - pool("base");
};
const pooledWithin = (ps: readonly PairedScore[]): boolean => pooledDrift(ps) >= -MARGIN;

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

/** A verdict and an answer count per rule, tallied against the true drift and the full probe. */
class Tally {
  private readonly rows = new Map<string, { answers: number; differs: number; accepts: number; rejects: number }>();
  private n = 0;
  private over = 0;

  async add(ps: PairedScore[], trueDrift: number): Promise<void> {
    this.n++;
    const trulyOver = trueDrift < -MARGIN - 1e-9;
    if (trulyOver) this.over++;
    const full = pooledWithin(ps) ? "within" : "over";
    for (const rule of rules) {
      const r = await rule.run(ps);
      const row = this.rows.get(rule.name) ?? { answers: 0, differs: 0, accepts: 0, rejects: 0 };
      row.answers += r.answers;
      if (r.verdict !== full) row.differs++;
      if (trulyOver && r.verdict === "within") row.accepts++;
      if (!trulyOver && r.verdict === "over") row.rejects++;
      this.rows.set(rule.name, row);
    }
  }

  print(title: string): void {
    console.log(`\n${title}: ${this.n} candidates, ${this.over} truly over the margin`);
    console.log(`  ${"rule".padEnd(30)} ${"answers".padStart(8)} ${"differs".padStart(8)} ${"false accept".padStart(13)} ${"false reject".padStart(13)}`);
    const pct = (x: number, of: number) => `${((100 * x) / Math.max(1, of)).toFixed(2)}%`;
    for (const [name, r] of this.rows)
      console.log(
        `  ${name.padEnd(30)} ${(r.answers / this.n).toFixed(1).padStart(8)} ${pct(r.differs, this.n).padStart(8)} ${pct(r.accepts, this.over).padStart(13)} ${pct(r.rejects, this.n - this.over).padStart(13)}`,
      );
  }
}

async function simulated(): Promise<void> {
  const populations = [
    { name: "drifts within ±0.5 of the margin", drift: (s: number) => -MARGIN + ((s % 21) - 10) * 0.05 },
    { name: "drifts from 0 to −1.2", drift: (s: number) => -(s % 25) * 0.05 },
  ];
  for (const heavy of [false, true])
    for (const pop of populations) {
      const t = new Tally();
      for (let s = 0; s < N; s++) {
        const drift = pop.drift(s);
        await t.add(candidate(drift, 0.2 + (0.4 * ((s * 7919) % 100)) / 100, heavy, 1000 + s), drift);
      }
      t.print(`simulated, ${pop.name}, ${heavy ? "heavy-tailed" : "normal"} noise`);
    }
}

const STORIES = [
  "Once upon a time, there was a little girl named Lily.",
  "One day, a boy named Tim went to the park.",
  "The cat sat by the window and looked at the rain.",
  "Sam had a big red ball. He liked to play with it.",
  "Mom said it was time for bed, but Ben was not tired.",
  "There was a small bird who could not fly.",
  "Anna found a shiny key in the garden.",
  "The dog and the frog were best friends.",
];

async function real(): Promise<void> {
  const modelPath = path.join(import.meta.dirname, "..", "models", "test", "stories260K.gguf");
  const perPrompt = Math.max(4, Number(values.answers));
  const llama = await getLlama({ gpu: false });
  const model = await llama.loadModel({ modelPath });
  const prompts: ProbePrompt[] = STORIES.flatMap((text, i) =>
    Array.from({ length: perPrompt }, (_, k) => ({ tokens: model.tokenize(text, true), temperature: 1, topP: 1, maxTokens: 48, seed: 1000 * i + k })),
  );
  await model.dispose();
  // The gate's 32: seeds 0–3 of each prompt, each prompt once before any twice (as compare orders them).
  const gateIdx = interleavedOrder(prompts.filter((_, j) => j % perPrompt < 4).map((p) => p.tokens.join(","))).map((g) => {
    const prompt = Math.floor(g / 4);
    return prompt * perPrompt + (g % 4);
  });
  const probe = new FluencyProbe({ llama, modelPath, threads: os.availableParallelism() > 2 ? 2 : 1, maxContextSize: 256 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-stopping-"));
  const t = new Tally();
  console.log(`real: stories260K, ${prompts.length} answers per candidate (${perPrompt} per prompt), the gate's 32 among them`);
  try {
    for (const magnitude of values.magnitudes.split(",").map(Number))
      for (let seed = 1; seed <= Number(values.seeds); seed++) {
        const file = path.join(dir, `m${magnitude}-s${seed}.gguf`);
        writeLoraAdapter(file, modelPath, { magnitude, seed });
        const c = await probe.compare(file, prompts);
        fs.rmSync(file);
        const byPrompt = new Map((c.pairs ?? []).map((x) => [x.prompt, x] as const));
        const gate = gateIdx.map((j) => byPrompt.get(j)!);
        // The true drift from the answers the gate does not see (an estimate independent of the gate's).
        const rest = [...byPrompt].filter(([j]) => j % perPrompt >= 4).map(([, x]) => x);
        const drift = pooledDrift(rest);
        await t.add(gate, drift);
        console.log(
          `  magnitude ${magnitude}, seed ${seed}: true drift ${drift.toFixed(3)} (${c.seconds.toFixed(1)} s); the gate's 32: ${pooledDrift(gate).toFixed(3)}, ${pooledWithin(gate) ? "within" : "over"}`,
        );
      }
  } finally {
    await probe.close();
    await llama.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  t.print("real, stories260K");
}

if (values.real) await real();
else await simulated();
