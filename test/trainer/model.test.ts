/**
 * The tfjs model beyond parity: chunked log-softmax and its custom gradient agree with a plain
 * autodiff reference, batching/padding does not change results, no tensors leak, bad input is
 * refused clearly. Runs on stories260K (real weights).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { hiddenStates, loadBaseModel, outputLogits, tokenLogProbs, type BaseModel } from "../../trainer/model/index.js";
import { createLora, disposeLora, loraVariables, type LoraParams } from "../../trainer/lora/params.js";
import { storiesModelPath } from "../helpers/cli.js";

const storiesPath = storiesModelPath();
const skip = !storiesPath && "stories260K.gguf not found";
let model: BaseModel;
let lora: LoraParams;

const seqA = [1, 403, 407, 261, 378, 429, 267, 10, 55, 99, 300, 12];
const seqB = [1, 70, 80, 90, 100, 110];

before(async () => {
  if (!storiesPath) return;
  await initBackend();
  model = await loadBaseModel(storiesPath);
  lora = createLora(model, { rank: 4, alpha: 8, seed: 7 });
  // Non-zero B so the adapter matters and A gets gradients too.
  tf.tidy(() => {
    for (const [i, v] of loraVariables(lora).entries()) if (i % 2 === 1) v.assign(tf.randomNormal(v.shape, 0, 0.05, "float32", 100 + i));
  });
});
after(() => {
  if (lora) disposeLora(lora);
  model?.dispose();
});

/** Plain autodiff reference: full logits, tf.logSoftmax, no chunks, no custom gradient. */
function plainSumLogProb(tokens: number[], start: number): tf.Scalar {
  const T = tokens.length;
  const h = hiddenStates(model, lora, tf.tensor2d(tokens, [1, T], "int32"));
  const logp = tf.logSoftmax(tf.matMul(h, model.weights.output, false, true));
  // One-hot selection: gather's gradient needs a kernel the wasm backend lacks.
  const onehot = new Float32Array(T * model.config.nVocab);
  for (let t = start; t < T; t++) onehot[(t - 1) * model.config.nVocab + tokens[t]] = 1;
  return tf.sum(tf.mul(logp, tf.tensor2d(onehot, [T, model.config.nVocab])));
}

function chunkedSumLogProb(tokens: number[], start: number, chunkFloats: number): tf.Scalar {
  const r = tokenLogProbs(model, lora, { tokens: [tokens], targetStart: [start] }, { chunkFloats });
  return tf.sum(r.logprobs);
}

test("chunked log-probs and their custom gradient equal plain autodiff (several chunks)", { skip }, () => {
  const vars = loraVariables(lora);
  const plain = tf.variableGrads(() => plainSumLogProb(seqA, 2), vars);
  // 3 rows of 512 logits per chunk: 10 scored rows → 4 chunks.
  const chunked = tf.variableGrads(() => chunkedSumLogProb(seqA, 2, 3 * 512), vars);
  assert.ok(Math.abs(plain.value.dataSync()[0] - chunked.value.dataSync()[0]) < 1e-4, "same value");
  let maxAbs = 0;
  let maxDiff = 0;
  for (const v of vars) {
    const a = plain.grads[v.name].dataSync();
    const b = chunked.grads[v.name].dataSync();
    for (let i = 0; i < a.length; i++) {
      maxAbs = Math.max(maxAbs, Math.abs(a[i]));
      maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
    }
  }
  assert.ok(maxAbs > 1e-3, `gradients w.r.t. LoRA are not all zero (max ${maxAbs})`);
  assert.ok(maxDiff <= 1e-4 * Math.max(1, maxAbs), `custom gradient differs from autodiff by ${maxDiff}`);
  tf.dispose([plain.value, chunked.value, ...Object.values(plain.grads), ...Object.values(chunked.grads)]);
});

test("a fresh adapter (B = 0) changes nothing; a non-zero one changes the log-probs", { skip }, () => {
  const fresh = createLora(model, { rank: 4, alpha: 8, seed: 1 });
  const run = (l: LoraParams | null) => {
    const r = tokenLogProbs(model, l, { tokens: [seqA], targetStart: [1] });
    const out = r.logprobs.arraySync()[0];
    tf.dispose([r.logprobs, r.mask]);
    return out;
  };
  const base = run(null);
  assert.deepEqual(run(fresh), base);
  const adapted = run(lora);
  assert.ok(adapted.some((x, i) => Math.abs(x - base[i]) > 1e-3), "the trained-looking adapter moves some log-prob");
  disposeLora(fresh);
});

test("right padding in a batch does not change a sequence's log-probs; masks mark scored positions", { skip }, () => {
  const alone = tokenLogProbs(model, lora, { tokens: [seqB], targetStart: [2] });
  const batched = tokenLogProbs(model, lora, { tokens: [seqA, seqB], targetStart: [1, 2] });
  const a = alone.logprobs.arraySync()[0];
  const b = batched.logprobs.arraySync()[1];
  for (let t = 0; t < seqB.length; t++) assert.ok(Math.abs(a[t] - b[t]) < 1e-5, `position ${t}: ${a[t]} vs ${b[t]}`);
  assert.deepEqual(b.slice(seqB.length), new Array(seqA.length - seqB.length).fill(0));
  assert.deepEqual(batched.mask.arraySync()[1], [0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
  tf.dispose([alone.logprobs, alone.mask, batched.logprobs, batched.mask]);
});

test("top-k: sorted log-probs of the next-token distribution, consistent with the scored token", { skip }, () => {
  const r = tokenLogProbs(model, null, { tokens: [seqA], targetStart: [1] }, { topK: 5 });
  const ids = r.topK!.ids.arraySync()[0];
  const lps = r.topK!.logprobs.arraySync()[0];
  const lp = r.logprobs.arraySync()[0];
  assert.equal(r.topK!.ids.dtype, "int32");
  assert.deepEqual(ids[0], [0, 0, 0, 0, 0], "position 0 is not scored");
  for (let t = 1; t < seqA.length; t++) {
    for (let j = 1; j < 5; j++) assert.ok(lps[t][j] <= lps[t][j - 1], "sorted descending");
    const mass = lps[t].reduce((s, x) => s + Math.exp(x), 0);
    assert.ok(mass <= 1 + 1e-5 && mass > 0, "a probability mass");
    assert.ok(lp[t] <= lps[t][0] + 1e-6, "the scored token is not above the top-1");
    const j = ids[t].indexOf(seqA[t]);
    if (j >= 0) assert.ok(Math.abs(lps[t][j] - lp[t]) < 1e-5, "same log-prob for the same token");
  }
  tf.dispose([r.logprobs, r.mask, r.topK!.ids, r.topK!.logprobs]);
});

test("no tensors leak across forward and gradient calls", { skip }, () => {
  const vars = loraVariables(lora);
  const step = () => {
    const g = tf.variableGrads(() => {
      const r = tokenLogProbs(model, lora, { tokens: [seqA, seqB], targetStart: [1, 1] }, { topK: 3 });
      return tf.neg(tf.sum(r.logprobs)) as tf.Scalar;
    }, vars);
    tf.dispose([g.value, ...Object.values(g.grads)]);
  };
  step();
  const before = tf.memory().numTensors;
  for (let i = 0; i < 3; i++) step();
  assert.equal(tf.memory().numTensors, before);
});

test("bad batches are refused with a clear message", { skip }, () => {
  assert.throws(() => tokenLogProbs(model, null, { tokens: [[1, 2, 512]], targetStart: [1] }), /token id 512 at \[0\]\[2\] is outside the vocabulary/);
  assert.throws(() => tokenLogProbs(model, null, { tokens: [[1, 2]], targetStart: [] }), /1 sequences but 0 targetStart/);
  assert.throws(() => tokenLogProbs(model, null, { tokens: [[1]], targetStart: [1] }), /shorter than 2 tokens/);
});

test("outputLogits and weights.output give the same logits as the forward's projection", { skip }, () => {
  const n0 = tf.memory().numTensors;
  tf.tidy(() => {
    const h = hiddenStates(model, null, tf.tensor2d(seqB, [1, seqB.length], "int32"));
    const a = outputLogits(model, h);
    const b = tf.matMul(h, model.weights.output, false, true);
    assert.deepEqual(a.shape, [seqB.length, model.config.nVocab]);
    assert.ok(tf.max(tf.abs(tf.sub(a, b))).dataSync()[0] < 1e-4);
  });
  assert.equal(tf.memory().numTensors, n0);
});
