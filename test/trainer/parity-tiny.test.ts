/**
 * Parity on the generated tiny models of each architecture (llama: normal RoPE; qwen2: neox
 * RoPE + Q/K/V biases; qwen3: neox RoPE + per-head Q/K RMSNorm; GQA in all), without and with
 * an adapter our trainer wrote after training steps: log-probs equal llama.cpp's within 1e-3.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel } from "../../trainer/model/index.js";
import { disposeLora, writeLoraAdapter } from "../../trainer/lora/index.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { llamaCppLogProbs, llamaCppTokenize, maxLogProbDiff as maxDiff, ourLogProbs as lps, trainedLora } from "./parity-reference.js";

const TOL = 1e-3;

for (const arch of ["llama", "qwen2", "qwen3"] as const) {
  test(`tiny ${arch}: log-probs equal llama.cpp's within 1e-3, without and with a trained adapter`, async () => {
    await initBackend();
    const file = await tinyModel({ arch });
    const model = await loadBaseModel(file);
    try {
      assert.equal(model.arch, arch);
      assert.ok(model.config.nHeadKv < model.config.nHead, "the tiny model exercises grouped-query attention");
      const tokens = await llamaCppTokenize(file, "The quick brown fox jumps over the lazy dog. Hello world, this is a test of the tiny model!");
      assert.ok(tokens.length >= 16, `a real sequence (${tokens.length} tokens)`);
      const ref = await llamaCppLogProbs(file, tokens);
      const base = await lps(model, null, tokens);
      const d0 = maxDiff(base, ref);
      assert.ok(d0 <= TOL, `${arch} base: max |ours − llama.cpp| = ${d0.toExponential(2)}`);

      const lora = await trainedLora(model, tokens);
      const adapter = path.join(tempDir(), `${arch}-adapter.gguf`);
      await writeLoraAdapter(adapter, model, lora);
      const refLora = await llamaCppLogProbs(file, tokens, { loraPath: adapter });
      const ours = await lps(model, lora, tokens);
      assert.ok(maxDiff(refLora, ref) > 1e-2, `the adapter changes llama.cpp's log-probs (max ${maxDiff(refLora, ref).toExponential(2)})`);
      const d1 = maxDiff(ours, refLora);
      assert.ok(d1 <= TOL, `${arch} + adapter: max |ours − llama.cpp| = ${d1.toExponential(2)}`);
      disposeLora(lora);
    } finally {
      model.dispose();
    }
  });
}
