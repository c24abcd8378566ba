/**
 * Llama 3.x carries `rope_freqs.weight` (per-pair RoPE frequency divisors) instead of rope
 * scaling metadata. A tiny llama with such factors: log-probs equal llama.cpp's within 1e-3,
 * and differ from the same model without them (so the factors are really applied).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { initBackend } from "../../trainer/backend.js";
import { GgmlType } from "../../models/gguf/types.js";
import { readGguf, readTensorBytes } from "../../models/gguf/reader.js";
import { f32Bytes, writeGguf } from "../../models/gguf/writer.js";
import { loadBaseModel } from "../../trainer/model/index.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { llamaCppLogProbs, llamaCppTokenize, maxLogProbDiff as maxDiff, ourLogProbs } from "./parity-reference.js";

test("llama with rope_freqs.weight (Llama 3.x style): parity with llama.cpp within 1e-3", async () => {
  await initBackend();
  const src = await tinyModel({ arch: "llama" });
  const f = readGguf(src);
  const plainModel = await loadBaseModel(src);
  const half = plainModel.config.ropeDim / 2;
  // Llama 3's shape: factor 1 for high frequencies rising to 8 for the lowest ones.
  const factors = new Float32Array(half).map((_, i) => 1 + (7 * i) / (half - 1));
  const file = `${tempDir()}/rope-freqs.gguf`;
  writeGguf(file, {
    metadata: [...f.metadata].filter(([k]) => k !== "general.alignment"),
    tensors: [
      ...f.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, data: readTensorBytes(f, t) })),
      { name: "rope_freqs.weight", dims: [half], type: GgmlType.F32, data: f32Bytes(factors) },
    ],
  });
  const model = await loadBaseModel(file);
  try {
    assert.deepEqual(model.weights.ropeFreqFactors, factors);
    const tokens = await llamaCppTokenize(file, "The quick brown fox jumps over the lazy dog again and again, far away from home.");
    const ref = await llamaCppLogProbs(file, tokens);
    const ours = await ourLogProbs(model, null, tokens);
    assert.ok(maxDiff(ours, ref) <= 1e-3, `max |ours − llama.cpp| = ${maxDiff(ours, ref)}`);
    assert.ok(maxDiff(await ourLogProbs(plainModel, null, tokens), ref) > 1e-3, "the factors change the result");
  } finally {
    model.dispose();
    plainModel.dispose();
  }
});
