/**
 * What sizing the fluency probe's llama.cpp batches by their measured time costs the probe
 * (electron/core/inference/backgroundChunk.ts): one gate's compare (the candidate's answers and
 * the base model's, sampled and scored) on a real-shaped model, with the default target and with
 * whole chunks (`chunkTargetMs` Infinity: 16 tokens a sequence), alternating in one process.
 * What it buys (chat's first tokens during a cycle) is bench/learning-cycle.ts's to show.
 *
 *   node --import tsx bench/probe-chunk.ts [--shape qwen2.5-0.5b] [--type q8_0] [--rounds 2] [--prompts 8] [--answer-tokens 48]
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { getLlama } from "node-llama-cpp";
import { CHUNK_TARGET_MS } from "../electron/core/inference/backgroundChunk.js";
import { FluencyProbe, type ProbePrompt } from "../electron/core/inference/fluencyProbe.js";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import type { ShapeType } from "../models/tiny/generate.js";
import { writeLoraAdapter } from "../test/inference/loraFixture.js";
import { tempDir } from "../test/helpers/cli.js";

const { values } = parseArgs({
  options: {
    shape: { type: "string", default: "qwen2.5-0.5b" },
    type: { type: "string", default: "q8_0" },
    rounds: { type: "string", default: "2" },
    prompts: { type: "string", default: "8" },
    "answer-tokens": { type: "string", default: "48" },
  },
});
const model = ensureShapeModel(values.shape, values.type as ShapeType);
const llama = await getLlama({ gpu: false });
const adapter = path.join(tempDir("clawrl-probe-chunk-"), "candidate.gguf");
writeLoraAdapter(adapter, model, { magnitude: 0.001 });
// Prompts of 33 tokens (a chat turn's size in the cycle bench), distinct, with fixed seeds.
const prompts: ProbePrompt[] = Array.from({ length: Number(values.prompts) }, (_, i) => ({
  tokens: Array.from({ length: 33 }, (_, j) => 100 + ((i * 37 + j * 11) % 5000)),
  temperature: 1,
  topP: 1,
  maxTokens: Number(values["answer-tokens"]),
  seed: 7 + i,
}));
console.log(`${values.shape} (${values.type}), ${prompts.length} prompts × ≤ ${values["answer-tokens"]} tokens, candidate and base answers`);
for (let round = 0; round < Number(values.rounds); round++) {
  for (const [label, target] of [
    [`sized (${CHUNK_TARGET_MS} ms)`, CHUNK_TARGET_MS],
    ["whole chunks", Infinity],
  ] as const) {
    const probe = new FluencyProbe({ llama, modelPath: model, threads: 2, chunkTargetMs: target });
    const t0 = performance.now();
    const c = await probe.compare(adapter, prompts);
    const s = (performance.now() - t0) / 1000;
    console.log(
      `  ${label.padEnd(16)} ${s.toFixed(1)} s  (${c.candidate.tokens} + ${c.base.tokens} tokens, ${probe.counts.steps} evaluations, chunk ${probe.chunk.size})`,
    );
    await probe.close();
  }
}
await llama.dispose();
