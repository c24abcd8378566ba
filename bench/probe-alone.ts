/**
 * The gate's fluency probe alone on a real shape: one candidate's answers judged under several
 * probe settings (sequences at once, batch budget), alternated in one process so they share the
 * machine's state; then what one decode round of W sequences costs llama.cpp here, three ways
 * (issue 31: on the Qwen3-1.7B shape the probe is most of a cycle).
 *
 *   node --import tsx bench/probe-alone.ts [--shape qwen3-1.7b] [--type q8_0] [--configs 2:150,4:150] [--prompts 4] [--reps 3]
 *
 * A config is `sequences:batchMs`. The first rep of each also samples the base model's answers
 * (remembered after), so the figures after it are the candidate's answers and both scorings.
 * The rounds part feeds one token to each of W sequences, all queued in the same tick: without
 * logits (a prompt chunk), with a sampled token (controlledEvaluate, as the probe's rounds ask
 * since lockstep.ts), and as the probe sampled before (one `evaluate` generator per sequence).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { getLlama, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { FluencyProbe, type ProbePrompt } from "../electron/core/inference/fluencyProbe.js";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import type { ShapeType } from "../models/tiny/generate.js";
import { writeLoraAdapter } from "../test/inference/loraFixture.js";

const { values } = parseArgs({
  options: {
    shape: { type: "string", default: "qwen3-1.7b" },
    type: { type: "string", default: "q8_0" },
    configs: { type: "string", default: "2:150,4:150" },
    prompts: { type: "string", default: "4" },
    reps: { type: "string", default: "3" },
    threads: { type: "string", default: String(Math.max(1, os.availableParallelism())) },
  },
});
const threads = Number(values.threads);
const modelPath = ensureShapeModel(values.shape, values.type as ShapeType);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-probe-alone-"));
const adapter = path.join(dir, "candidate.gguf");
writeLoraAdapter(adapter, modelPath, { rank: 16, magnitude: 0.02 });
const llama = await getLlama({ gpu: false });
const model = await llama.loadModel({ modelPath });
const ask = (animal: string) => `<|im_start|>user\nTell me a short story about a ${animal}.<|im_end|>\n<|im_start|>assistant\n`;
const prompts: ProbePrompt[] = ["cat", "dog", "fox", "owl", "bee", "elk", "ant", "yak"].slice(0, Number(values.prompts)).map((a, i) => ({
  tokens: model.tokenize(ask(a), true),
  temperature: 0.8,
  topP: 0.95,
  maxTokens: 48,
  seed: 1000 + i,
}));

console.log(`${values.shape} (${values.type}), ${threads} threads, ${prompts.length} prompts of ${prompts[0].tokens.length} tokens, answers ≤ 48 tokens`);
const runs = values.configs.split(",").map((c) => {
  const [parallel, batchMs] = c.split(":").map(Number);
  return { parallel, batchMs, seconds: [] as number[], probe: new FluencyProbe({ llama, modelPath, threads, maxContextSize: 2048, parallel, batchMs }) };
});
for (let rep = 0; rep < Number(values.reps); rep++) {
  for (const r of runs) {
    const t0 = performance.now();
    const c = await r.probe.compare(adapter, prompts);
    const s = (performance.now() - t0) / 1000;
    if (rep > 0) r.seconds.push(s);
    console.log(
      `  ${r.parallel} sequences, ${r.batchMs} ms: ${s.toFixed(1)} s for ${c.candidate.answers} answers (${c.candidate.tokens} tokens)` +
        `${rep === 0 ? ", the base model's sampled too" : ""}; ${r.probe.sequences} sequences of ${r.probe.contextTokens} tokens, chunk ${r.probe.chunkTokens}`,
    );
  }
}
for (const r of runs) {
  const mean = r.seconds.reduce((a, b) => a + b, 0) / Math.max(1, r.seconds.length);
  console.log(`probe, ${r.parallel} sequences at ${r.batchMs} ms: ${mean.toFixed(1)} s a candidate (mean of ${r.seconds.length}, base answers remembered)`);
  await r.probe.close();
}

// One decode round of W sequences, three ways.
const ctx = await model.createContext({ sequences: 4, contextSize: { max: 256 }, threads });
const seqs = Array.from({ length: 4 }, () => ctx.getSequence());
const prompt = prompts[0].tokens as Token[];
const ROUNDS = 8;
const perRound = async (w: number, round: (s: LlamaContextSequence, j: number, i: number) => Promise<unknown>): Promise<number> => {
  for (const s of seqs) await s.clearHistory();
  await Promise.all(seqs.slice(0, w).map((s) => s.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1))));
  const t0 = performance.now();
  for (let i = 0; i < ROUNDS; i++) await Promise.all(seqs.slice(0, w).map((s, j) => round(s, j, i)));
  return (performance.now() - t0) / ROUNDS;
};
/** The probe's sampling settings (no top-k, as served: fluencyProbe.ts NO_TOP_K). */
const options = (j: number, i: number) => ({ temperature: 0.8, topP: 0.95, topK: null as unknown as number, minP: 0, seed: 1000 * j + i });
/**
 * As the probe sampled before its rounds (lockstep.ts): a generator per sequence, each asking for its next token when it has its
 * last; `paced`: a macrotask later (setImmediate), so every sequence's request is queued before
 * node-llama-cpp's dispatch loop looks for the next batch.
 */
async function generators(w: number, paced: boolean): Promise<number> {
  for (const s of seqs) await s.clearHistory();
  await Promise.all(seqs.slice(0, w).map((s) => s.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1))));
  const t0 = performance.now();
  await Promise.all(
    seqs.slice(0, w).map(async (s, j) => {
      const it = s.evaluate(prompt.slice(-1), options(j, 0));
      let n = 0;
      try {
        for await (const token of it) {
          void token;
          if (++n >= ROUNDS) break;
          if (paced) await new Promise((r) => setImmediate(r));
        }
      } finally {
        await it.return();
      }
    }),
  );
  return (performance.now() - t0) / ROUNDS;
}
for (const w of [1, 2, 4]) {
  const none = await perRound(w, (s, _j, i) => s.evaluateWithoutGeneratingNewTokens([prompt[i % prompt.length]]));
  const sampled = await perRound(w, (s, j, i) =>
    s.controlledEvaluate([[prompt[i % prompt.length], { generateNext: { token: true, options: options(j, i) } }]]),
  );
  const generated = await generators(w, false);
  const paced = await generators(w, true);
  console.log(
    `rounds, ${w} sequence${w > 1 ? "s" : ""} × 1 token: no logits ${none.toFixed(0)} ms; a sampled token (controlledEvaluate) ${sampled.toFixed(0)} ms; ` +
      `evaluate generators ${generated.toFixed(0)} ms, asking for the next token a macrotask later ${paced.toFixed(0)} ms`,
  );
}
await ctx.dispose();
await model.dispose();
fs.rmSync(dir, { recursive: true, force: true });
process.exit(0);
