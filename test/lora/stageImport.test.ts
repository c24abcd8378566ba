/**
 * stageImport (electron/core/adapters/importAdapter.ts): a refused adapter leaves no staging
 * directory; a served model the trainer cannot adapt is a refusal with the reason, not a crash;
 * a staged import is laid out as the trainer writes candidates.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { AdapterMismatchError, stageImport } from "../../electron/core/adapters/importAdapter.js";
import { readOptimizerState } from "../../models/adapters/optimizerState.js";
import { GgufValueType } from "../../models/gguf/types.js";
import { writeGguf } from "../../models/gguf/writer.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { writeLoraAdapter as writeRandomAdapter } from "../inference/loraFixture.js";

test("refusals write nothing; a base the trainer cannot adapt is a refusal with the reason", async () => {
  const dir = tempDir();
  const qwen = await tinyModel({ arch: "qwen2" });
  const llamaAdapter = path.join(dir, "llama.gguf");
  writeRandomAdapter(llamaAdapter, await tinyModel({ arch: "llama" }), { rank: 2 });
  const staging = path.join(dir, ".staging-x");
  assert.throws(
    () => stageImport(llamaAdapter, qwen, staging),
    (e: unknown) => e instanceof AdapterMismatchError && /architecture 'llama'/.test(e.message),
  );
  assert.equal(fs.existsSync(staging), false);

  const phi = path.join(dir, "phi3.gguf");
  writeGguf(phi, { metadata: [["general.architecture", { type: GgufValueType.STRING, value: "phi3" }]], tensors: [] });
  assert.throws(
    () => stageImport(llamaAdapter, phi, staging),
    (e: unknown) =>
      e instanceof AdapterMismatchError && /the served model cannot take an adapter from the app: .*architecture 'phi3' is not supported/.test(e.message),
  );
  assert.equal(fs.existsSync(staging), false);
});

test("a staged import: adapter.gguf, AdamW at step 0 under the trainer's names and shapes, metrics.json with what was imported", async () => {
  const dir = tempDir();
  const qwen = await tinyModel({ arch: "qwen2", layers: 2 });
  const file = path.join(dir, "a.gguf");
  writeRandomAdapter(file, qwen, { rank: 3, alpha: 6 });
  const staging = path.join(dir, ".staging-y");
  const s = stageImport(file, qwen, staging);
  assert.deepEqual([s.format, s.rank, s.alpha, s.pairs, s.layers], ["gguf", 3, 6, 14, 2]);
  assert.deepEqual(fs.readdirSync(staging).sort(), ["adapter.gguf", "metrics.json", "optimizer.bin"]);
  const { state } = readOptimizerState(path.join(staging, "optimizer.bin"));
  assert.equal(state.step, 0);
  assert.deepEqual(state.m["blk.1.attn_q.weight.lora_a"].shape, [64, 3]);
  assert.deepEqual(state.v["blk.1.ffn_down.weight.lora_b"].shape, [3, 64]);
  assert.equal(Object.keys(state.m).length, 28);
  const m = JSON.parse(fs.readFileSync(path.join(staging, "metrics.json"), "utf8"));
  assert.deepEqual(m.model, { arch: "qwen2", nLayer: 2, nEmbd: 64, nVocab: m.model.nVocab, file: qwen });
  assert.equal(m.totalSteps, 0);
  assert.equal(m.imported.source, file);
  assert.throws(() => stageImport(file, qwen, staging), /already exists/);
});
