/**
 * Issue 31's fused head slices (one softmax kernel per vocabulary slice, the slice's log-sum-exp
 * read off it, no second exp for E_p[W] or the KL) give what the unfused path and a plain full
 * log-softmax give: log-sum-exp, log-probs of given ids, E_p[W], KL, top-k, on random hidden
 * rows through stories260K's real output projection, in one slice and in 6 streamed ones; the
 * slice's softmax both as the native addon's one pass (where built) and as tfjs's kernels.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel, type BaseModel } from "../../trainer/model/index.js";
import { headForward, setFusedHeadSlices, setNativeHeadSlices, type HeadResult } from "../../trainer/model/head.js";
import { nativeGemm, nativeProductsFor } from "../../trainer/native/gemm.js";
import { storiesModelPath } from "../helpers/cli.js";
import { frozenTensor } from "../../trainer/model/fast-matmul.js";

let whole: BaseModel;
let sliced: BaseModel;

before(async () => {
  await initBackend();
  whole = await loadBaseModel(storiesModelPath());
  sliced = await loadBaseModel(storiesModelPath(), { headChunkRows: 100, placement: { layers: "device", head: "host-f32" } });
});
after(() => {
  setFusedHeadSlices(true);
  setNativeHeadSlices(true);
  whole?.dispose();
  sliced?.dispose();
});

function fullOutput(m: BaseModel): tf.Tensor2D {
  const parts: tf.Tensor2D[] = [];
  for (let c = 0; c < m.weights.numHeadChunks; c++) parts.push(frozenTensor(m.weights.headChunk(c).w));
  return parts.length === 1 ? parts[0] : tf.concat<tf.Tensor2D>(parts);
}

const maxDiff = (a: tf.Tensor, b: tf.Tensor): number => tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);

test("fused head slices equal the unfused path and a plain full log-softmax", () => {
  const N = 9;
  const D = whole.config.nEmbd;
  const V = whole.config.nVocab;
  const h = tf.mul<tf.Tensor2D>(tf.randomNormal([N, D], 0, 1, "float32", 3), 2);
  const other = tf.add<tf.Tensor2D>(h, tf.randomNormal([N, D], 0, 0.3, "float32", 4));
  const ids = new Int32Array(N * 3).map((_, i) => (i * 37 + 5) % V);
  const ref = tf.tidy(() => {
    const W = fullOutput(whole);
    const z = tf.matMul(h, W, false, true);
    const logp = tf.logSoftmax(z);
    const logq = tf.logSoftmax(tf.matMul(other, W, false, true));
    const rows = tf.reshape(
      tf.gather(
        tf.reshape(logp, [-1]),
        tf.tensor1d(
          Array.from(ids, (id, i) => Math.floor(i / 3) * V + id),
          "int32",
        ),
      ),
      [N, 3],
    );
    return {
      lse: tf.logSumExp(z, 1),
      logprobs: rows,
      expectation: tf.matMul(tf.exp(logp), W),
      kl: tf.sum(tf.mul(tf.exp(logp), tf.sub(logp, logq)), 1),
      top: tf.topk(logp, 4).values,
    };
  });
  const run = (m: BaseModel, fused: boolean, native = false): HeadResult => {
    setFusedHeadSlices(fused);
    setNativeHeadSlices(native);
    return headForward(m.weights, { h, ids, topK: 4, klAgainst: other, expectation: true });
  };
  const results: Array<[string, HeadResult]> = [
    ["one slice, unfused", run(whole, false)],
    ["one slice, fused", run(whole, true)],
    ["6 streamed slices, unfused", run(sliced, false)],
    ["6 streamed slices, fused", run(sliced, true)],
  ];
  // CI builds the addon (g++): the native pass must be there to be compared, not skipped.
  if (nativeProductsFor(tf.getBackend())) {
    assert.equal(typeof nativeGemm()?.softmaxRows, "function", "the addon has no softmaxRows: rebuild it (npm run build:native)");
    results.push(["one slice, fused, native", run(whole, true, true)], ["6 streamed slices, fused, native", run(sliced, true, true)]);
  }
  setFusedHeadSlices(true);
  setNativeHeadSlices(true);
  for (const [what, r] of results) {
    assert.ok(maxDiff(r.lse, ref.lse) < 1e-5, `${what}: log-sum-exp differs by ${maxDiff(r.lse, ref.lse)}`);
    assert.ok(maxDiff(r.logprobs!, ref.logprobs) < 1e-5, `${what}: log-probs differ by ${maxDiff(r.logprobs!, ref.logprobs)}`);
    assert.ok(maxDiff(r.expectation!, ref.expectation) < 1e-5, `${what}: E_p[W] differs by ${maxDiff(r.expectation!, ref.expectation)}`);
    assert.ok(maxDiff(r.kl!, ref.kl) < 1e-5, `${what}: KL differs by ${maxDiff(r.kl!, ref.kl)}`);
    assert.ok(maxDiff(r.top!.logprobs, ref.top) < 1e-5, `${what}: top-k log-probs differ by ${maxDiff(r.top!.logprobs, ref.top)}`);
  }
  for (const [, r] of results) tf.dispose([r.lse, r.logprobs!, r.expectation!, r.kl!, r.top!.ids, r.top!.logprobs]);
  tf.dispose([h, other, ...Object.values(ref)]);
});
