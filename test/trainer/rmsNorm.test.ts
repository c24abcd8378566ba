/**
 * RMSNorm's native pass (trainer/model/norm.ts, trainer/native/gemm/norm.cc): its value and the
 * gradient for x equal a float64 reference and tfjs's own kernels, on the wasm and the js cpu
 * backends, for rows that are not whole vectors and for a [B, T, H, D] tensor (Qwen3's query and
 * key norms over the head's dimension); the bits do not depend on the thread count; bad
 * arguments are refused with a clear error.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { nativeRmsNormFor, rmsNorm, setNativeRmsNorm } from "../../trainer/model/norm.js";
import { fill } from "../../common/random/fill.js";
import { skipWithoutNative, loadedNative, restoreNativeThreads, errorToScale } from "../helpers/native.js";

const skip = skipWithoutNative;
const EPS = 1e-6;

after(() => {
  setNativeRmsNorm(true);
  restoreNativeThreads();
});

/** y and dx of Σ dy·rmsNorm(x, w) in float64, row by row. */
function reference(x: Float32Array, w: Float32Array, dy: Float32Array, cols: number): { y: Float64Array; dx: Float64Array } {
  const y = new Float64Array(x.length);
  const dx = new Float64Array(x.length);
  for (let r = 0; r < x.length / cols; r++) {
    const o = r * cols;
    let ss = 0;
    for (let i = 0; i < cols; i++) ss += x[o + i] * x[o + i];
    const s = 1 / Math.sqrt(ss / cols + EPS);
    let dot = 0;
    for (let i = 0; i < cols; i++) dot += w[i] * dy[o + i] * x[o + i];
    for (let i = 0; i < cols; i++) {
      y[o + i] = x[o + i] * s * w[i];
      dx[o + i] = s * w[i] * dy[o + i] - (x[o + i] * s * s * s * dot) / cols;
    }
  }
  return { y, dx };
}

for (const backend of ["wasm", "cpu"] as const) {
  for (const shape of [
    [5, 37],
    [2, 3, 4, 16],
  ]) {
    test(`${backend}: native RMSNorm's value and gradient equal a float64 reference, ${JSON.stringify(shape)}`, skip, async () => {
      loadedNative();
      await initBackend(backend);
      assert.ok(nativeRmsNormFor(backend), "the native pass is used on this backend");
      const cols = shape[shape.length - 1];
      const n = shape.reduce((a, d) => a * d, 1);
      // Rows of very different scales: the normalisation is what is tested.
      const xv = fill(n, 3).map((v, i) => v * (1 + 50 * (Math.floor(i / cols) % 3)));
      const wv = fill(cols, 4).map((v) => 1 + v);
      const dyv = fill(n, 5);
      const [x, w, dy] = [tf.tensor(xv, shape), tf.tensor1d(wv), tf.tensor(dyv, shape)];
      const f = (a: tf.Tensor) => tf.sum(tf.mul(rmsNorm(a, w, EPS), dy));
      const value = rmsNorm(x, w, EPS).dataSync() as Float32Array;
      const dx = tf.grad(f)(x).dataSync() as Float32Array;
      const ref = reference(xv, wv, dyv, cols);
      assert.ok(errorToScale(value, ref.y) < 2e-6, `value off by ${errorToScale(value, ref.y)}`);
      assert.ok(errorToScale(dx, ref.dx) < 4e-6, `gradient off by ${errorToScale(dx, ref.dx)}`);
      setNativeRmsNorm(false);
      const plain = { y: rmsNorm(x, w, EPS).dataSync() as Float32Array, dx: tf.grad(f)(x).dataSync() as Float32Array };
      setNativeRmsNorm(true);
      assert.ok(errorToScale(plain.y, ref.y) < 1e-5 && errorToScale(plain.dx, ref.dx) < 1e-5, "the reference agrees with tfjs's own kernels");
      tf.dispose([x, w, dy]);
    });
  }
}

test("native RMSNorm gives the same bits on one thread and two", skip, () => {
  const g = loadedNative();
  // 600 rows of 896 (over 2^18 elements: split across threads, addon.cc runRows).
  const [rows, cols] = [600, 896];
  const [x, w, dy] = [fill(rows * cols, 11), fill(cols, 12), fill(rows * cols, 13)];
  const run = (threads: number) => {
    g.setThreads(threads);
    const out = { y: new Float32Array(rows * cols), dx: new Float32Array(rows * cols) };
    g.rmsNorm!(x, w, out.y, cols, EPS);
    g.rmsNormBackward!(x, w, dy, out.dx, cols, EPS);
    return out;
  };
  const one = run(1);
  const two = run(2);
  assert.deepEqual(two.y, one.y);
  assert.deepEqual(two.dx, one.dx);
  assert.ok(
    one.dx.some((v) => v !== 0),
    "a real result",
  );
});

test("native RMSNorm refuses partial rows, a weight of another width and outputs that overlap", skip, () => {
  const g = loadedNative();
  const [x, w, y] = [fill(32, 1), fill(8, 2), new Float32Array(32)];
  assert.throws(() => g.rmsNorm!(x.subarray(0, 30), w, y.subarray(0, 30), 8, EPS), /whole rows of 8/);
  assert.throws(() => g.rmsNorm!(x, fill(7, 2), y, 8, EPS), /whole rows of 8/);
  assert.throws(() => g.rmsNorm!(x, w, y, 0, EPS), /cols must be a positive integer/);
  assert.throws(() => Reflect.apply(g.rmsNorm!.bind(g), g, [x, w, y]), /expects \(x, w, y, cols, eps\)/);
  const heap = new Float32Array(40);
  heap.set(x);
  assert.throws(() => g.rmsNorm!(heap.subarray(0, 32), w, heap.subarray(8, 40), 8, EPS), /overlaps/);
  assert.throws(() => g.rmsNorm!(x, heap.subarray(0, 8), heap.subarray(4, 36), 8, EPS), /overlaps/);
  // In place is fine.
  const expect = new Float32Array(32);
  g.rmsNorm!(x, w, expect, 8, EPS);
  const inPlace = x.slice();
  g.rmsNorm!(inPlace, w, inPlace, 8, EPS);
  assert.deepEqual(inPlace, expect);
});
