/**
 * The wasm-friendly products (mm, mmT, frozenLinear) give the values and gradients tf.matMul's
 * own autodiff gives, on whatever backend initBackend picks (wasm here).
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { frozenLinear, mm, mmT } from "../../trainer/model/fast-matmul.js";

before(async () => {
  await initBackend();
});

function maxAbsDiff(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);
}

const A = () => tf.randomNormal<tf.Rank.R2>([5, 7], 0, 1, "float32", 1);
const B = () => tf.randomNormal<tf.Rank.R2>([7, 3], 0, 1, "float32", 2);
const BT = () => tf.randomNormal<tf.Rank.R2>([3, 7], 0, 1, "float32", 2);
// A fixed non-uniform upstream gradient, so every output element matters differently.
const W = () => tf.randomNormal([5, 3], 0, 1, "float32", 3);

test("mm: a·b with gradients for both inputs", () => {
  const [a, b, w] = [A(), B(), W()];
  const ref = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, y), w)))([a, b]);
  const got = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(mm(x as tf.Tensor2D, y as tf.Tensor2D), w)))([a, b]);
  assert.ok(maxAbsDiff(mm(a, b), tf.matMul(a, b)) < 1e-5);
  assert.ok(maxAbsDiff(ref[0], got[0]) < 1e-5 && maxAbsDiff(ref[1], got[1]) < 1e-5);
  assert.ok(tf.tidy(() => tf.max(tf.abs(got[1])).dataSync()[0]) > 0.1, "non-trivial gradient");
});

test("mmT: a·bᵀ with gradients for both inputs", () => {
  const [a, b, w] = [A(), BT(), W()];
  const ref = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, y, false, true), w)))([a, b]);
  const got = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(mmT(x as tf.Tensor2D, y as tf.Tensor2D), w)))([a, b]);
  assert.ok(maxAbsDiff(mmT(a, b), tf.matMul(a, b, false, true)) < 1e-5);
  assert.ok(maxAbsDiff(ref[0], got[0]) < 1e-5 && maxAbsDiff(ref[1], got[1]) < 1e-5);
});

test("frozenLinear: x·wᵀ for a frozen weight in GGUF layout [out, in], gradient for x only", () => {
  const [x0, wt, w] = [A(), BT(), W()];
  const v = tf.variable(tf.randomNormal([5, 7], 0, 1, "float32", 9));
  const ref = tf.variableGrads(() => tf.sum<tf.Scalar>(tf.mul(tf.matMul(tf.mul(v, x0), wt, false, true), w)), [v]);
  const got = tf.variableGrads(() => tf.sum<tf.Scalar>(tf.mul(frozenLinear(tf.mul<tf.Tensor2D>(v, x0), wt), w)), [v]);
  assert.ok(Math.abs(ref.value.dataSync()[0] - got.value.dataSync()[0]) < 1e-4);
  assert.ok(maxAbsDiff(ref.grads[v.name], got.grads[v.name]) < 1e-5);
  assert.ok(tf.tidy(() => tf.max(tf.abs(got.grads[v.name])).dataSync()[0]) > 0.1, "non-trivial gradient");
  v.dispose();
});
