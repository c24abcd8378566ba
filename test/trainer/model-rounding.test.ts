/**
 * activationRounding "llama.cpp-cpu": changes the forward on a quantized base (and nothing on
 * F32 weights), and training through it still works: gradients w.r.t. LoRA flow straight
 * through the rounding and stay close to the unrounded ones.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel, tokenLogProbs, type BaseModel } from "../../trainer/model/index.js";
import { createLora, disposeLora, loraVariables, type LoraParams } from "../../trainer/lora/index.js";
import { tinyModel } from "../helpers/models.js";

const tokens = [1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50];

function run(model: BaseModel, lora: LoraParams) {
  const vars = loraVariables(lora);
  const g = tf.variableGrads(() => tf.neg(tf.sum(tokenLogProbs(model, lora, { tokens: [tokens], targetStart: [1] }).logprobs)) as tf.Scalar, vars);
  const value = g.value.dataSync()[0];
  const flat = Float32Array.from(vars.flatMap((v) => Array.from(g.grads[v.name].dataSync())));
  tf.dispose([g.value, ...Object.values(g.grads)]);
  return { value, flat };
}

test("rounding emulation: forward changes on Q8_0, gradients pass straight through", async () => {
  await initBackend();
  const model = await loadBaseModel(await tinyModel({ arch: "llama", type: "q8_0" }));
  const lora = createLora(model, { rank: 4, alpha: 8, seed: 4 });
  tf.tidy(() => {
    for (const [i, v] of loraVariables(lora).entries()) if (i % 2 === 1) v.assign(tf.randomNormal(v.shape, 0, 0.05, "float32", i));
  });
  try {
    model.activationRounding = "none";
    const plain = run(model, lora);
    model.activationRounding = "llama.cpp-cpu";
    const n0 = tf.memory().numTensors;
    const rounded = run(model, lora);
    assert.equal(tf.memory().numTensors, n0, "no leaks through the rounding");
    assert.notEqual(rounded.value, plain.value, "the rounding changes the loss");
    assert.ok(Math.abs(rounded.value - plain.value) < 0.05 * Math.abs(plain.value), `${rounded.value} vs ${plain.value}`);
    let dot = 0;
    let n1 = 0;
    let n2 = 0;
    for (let i = 0; i < plain.flat.length; i++) {
      assert.ok(Number.isFinite(rounded.flat[i]));
      dot += plain.flat[i] * rounded.flat[i];
      n1 += plain.flat[i] ** 2;
      n2 += rounded.flat[i] ** 2;
    }
    assert.ok(n2 > 0, "gradients are not zero (round() alone would have zero gradient)");
    const cos = dot / Math.sqrt(n1 * n2);
    assert.ok(cos > 0.99, `gradient direction preserved (cosine ${cos})`);
  } finally {
    disposeLora(lora);
    model.dispose();
  }
});

test("rounding emulation is the identity on F32 weights", async () => {
  await initBackend();
  const model = await loadBaseModel(await tinyModel({ arch: "qwen3" }));
  try {
    const lp = () => {
      const r = tokenLogProbs(model, null, { tokens: [tokens], targetStart: [1] });
      const out = r.logprobs.arraySync()[0];
      tf.dispose([r.logprobs, r.mask]);
      return out;
    };
    const a = lp();
    model.activationRounding = "llama.cpp-cpu";
    assert.deepEqual(lp(), a);
  } finally {
    model.dispose();
  }
});
