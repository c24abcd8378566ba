/**
 * Tied output (no output.weight: the token embedding projects to the vocabulary, as in the
 * small Qwen models): parity with llama.cpp within 1e-3, with and without a trained adapter.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel } from "../../trainer/model/index.js";
import { disposeLora, writeLoraAdapter } from "../../trainer/lora/index.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { ggufVariant } from "./model-variants.js";
import { llamaCppLogProbs, llamaCppTokenize, maxLogProbDiff as maxDiff, ourLogProbs as lps, trainedLora } from "./parity-reference.js";

test("tied-output qwen2: log-probs equal llama.cpp's within 1e-3, with and without an adapter", async () => {
  await initBackend();
  const dir = tempDir();
  const file = ggufVariant(await tinyModel({ arch: "qwen2" }), dir, "tied.gguf", { dropTensors: ["output.weight"] });
  const model = await loadBaseModel(file);
  try {
    assert.equal(model.config.tiedOutput, true);
    const tokens = await llamaCppTokenize(file, "Hello world, this is a test of a tied output projection.");
    const ref = await llamaCppLogProbs(file, tokens);
    assert.ok(maxDiff(await lps(model, null, tokens), ref) <= 1e-3, `base: ${maxDiff(await lps(model, null, tokens), ref)}`);
    const lora = await trainedLora(model, tokens, { seed: 2 });
    const adapter = path.join(dir, "tied-adapter.gguf");
    await writeLoraAdapter(adapter, model, lora);
    const refLora = await llamaCppLogProbs(file, tokens, { loraPath: adapter });
    assert.ok(maxDiff(refLora, ref) > 1e-2, "the adapter matters");
    const d = maxDiff(await lps(model, lora, tokens), refLora);
    assert.ok(d <= 1e-3, `with adapter: ${d}`);
    disposeLora(lora);
  } finally {
    model.dispose();
  }
});
