/**
 * Tied output (no output.weight: the token embedding projects to the vocabulary, as in the
 * small Qwen models): parity with llama.cpp within 1e-3, with and without a trained adapter.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel, tokenLogProbs } from "../../trainer/model/index.js";
import { createLora, disposeLora, loraVariables, writeLoraAdapter } from "../../trainer/lora/index.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { ggufVariant } from "./model-variants.js";
import { llamaCppLogProbs, llamaCppTokenize, maxLogProbDiff as maxDiff, ourLogProbs as lps } from "./parity-reference.js";



test("tied-output qwen2: log-probs equal llama.cpp's within 1e-3, with and without an adapter", async () => {
  await initBackend();
  const dir = tempDir();
  const file = ggufVariant(await tinyModel({ arch: "qwen2" }), dir, "tied.gguf", { dropTensors: ["output.weight"] });
  const model = await loadBaseModel(file);
  try {
    assert.equal(model.config.tiedOutput, true);
    const tokens = await llamaCppTokenize(file, "Hello world, this is a test of a tied output projection.");
    const ref = await llamaCppLogProbs(file, tokens);
    assert.ok(maxDiff(lps(model, null, tokens), ref) <= 1e-3, `base: ${maxDiff(lps(model, null, tokens), ref)}`);
    const lora = createLora(model, { rank: 4, alpha: 8, seed: 2 });
    const opt = tf.train.sgd(0.05);
    for (let i = 0; i < 3; i++) opt.minimize(() => tf.neg(tf.sum(tokenLogProbs(model, lora, { tokens: [tokens], targetStart: [1] }).logprobs)) as tf.Scalar, false, loraVariables(lora));
    opt.dispose();
    const adapter = path.join(dir, "tied-adapter.gguf");
    writeLoraAdapter(adapter, model, lora);
    const refLora = await llamaCppLogProbs(file, tokens, { loraPath: adapter });
    assert.ok(maxDiff(refLora, ref) > 1e-2, "the adapter matters");
    const d = maxDiff(lps(model, lora, tokens), refLora);
    assert.ok(d <= 1e-3, `with adapter: ${d}`);
    disposeLora(lora);
  } finally {
    model.dispose();
  }
});
