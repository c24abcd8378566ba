/**
 * Adapter parity: an adapter our trainer wrote (after a few training steps, so B ≠ 0), loaded by
 * llama.cpp through node-llama-cpp, gives the log-probs our forward pass with LoRA gives.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel, type BaseModel } from "../../trainer/model/index.js";
import { createLora, disposeLora, readLoraAdapter, writeLoraAdapter, type LoraParams } from "../../trainer/lora/index.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { llamaCppLogProbs, ourLogProbs } from "./parity-reference.js";
import { AdamW } from "../../trainer/optim/adamw.js";
import { loraParamRecord, trainSteps } from "../../trainer/train/trainSteps.js";

const storiesPath = storiesModelPath();
const TOL = 1e-3;
let model: BaseModel;

before(async () => {
  await initBackend();
  model = await loadBaseModel(storiesPath);
});
after(() => model?.dispose());

function lps(lora: LoraParams | null, tokens: number[]): Promise<number[]> {
  return ourLogProbs(model, lora, tokens);
}

/** A few trainer steps (binary RL, reward +1: raises log p(tokens)) that move B away from zero. */
async function trainOn(lora: LoraParams, tokens: number[], steps: number, lr: number) {
  const optimizer = new AdamW(loraParamRecord(lora), { lr });
  await trainSteps({ model, lora, optimizer }, [{ tokens, promptLength: 1, reward: 1, teachers: [], truncated: false }], {
    method: "binary",
    steps,
    batchSize: 1,
  });
  optimizer.dispose();
}

test("stories260K + an adapter written after training steps: llama.cpp's log-probs equal ours within 1e-3", async () => {
  const train = [1, 403, 407, 261, 378, 429, 267, 10, 55, 99, 300, 12];
  const probe = [1, 403, 407, 261, 378, 429, 267, 10, 55, 99, 300, 12, 70, 80, 90];
  const lora = createLora(model, { rank: 8, alpha: 16, seed: 11 });
  const before = await lps(lora, train);
  await trainOn(lora, train, 5, 1e-2);
  const trained = await lps(lora, train);
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  assert.ok(sum(trained) > sum(before) + 1, `training raised log p(train) (${sum(before).toFixed(2)} → ${sum(trained).toFixed(2)})`);
  const bMax = Math.max(...[...lora.pairs.values()].map((p) => tf.tidy(() => tf.max(tf.abs(p.b)).dataSync()[0])));
  assert.ok(bMax > 1e-3, "B moved away from zero");

  const file = path.join(tempDir(), "adapter.gguf");
  await writeLoraAdapter(file, model, lora);
  const ours = await lps(lora, probe);
  const ref = await llamaCppLogProbs(storiesPath, probe, { loraPath: file });
  const base = await llamaCppLogProbs(storiesPath, probe);
  let worst = 0;
  let moved = 0;
  for (let t = 1; t < probe.length; t++) {
    worst = Math.max(worst, Math.abs(ours[t] - ref[t]));
    moved = Math.max(moved, Math.abs(ref[t] - base[t]));
  }
  assert.ok(moved > 0.1, `llama.cpp applied the adapter (max change ${moved.toFixed(3)})`);
  assert.ok(worst <= TOL, `max |ours − llama.cpp| with adapter = ${worst.toExponential(2)} > ${TOL}`);

  // Reading it back resumes exactly the same adapter.
  const back = readLoraAdapter(file, model);
  assert.deepEqual(await lps(back, probe), ours);
  disposeLora(back);
  disposeLora(lora);
});
