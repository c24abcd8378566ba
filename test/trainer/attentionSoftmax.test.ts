/**
 * Attention's causal softmax as one native pass (trainer/model/attention-softmax.ts,
 * trainer/native/gemm/activations.cc): its probabilities and the raw scores' gradient equal a
 * float64 reference and tfjs's own kernels (scale, mask add, softmax), on the wasm and the js
 * cpu backends, for g heads' [T, T] blocks with T not a whole number of vectors; the bits do not
 * depend on the thread count; bad arguments are refused with a clear error.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { causalMask } from "../../trainer/model/block.js";
import { causalSoftmax, nativeCausalSoftmaxFor, setNativeCausalSoftmax } from "../../trainer/model/attention-softmax.js";
import { fill } from "../../common/random/fill.js";
import { skipWithoutNative, loadedNative, restoreNativeThreads, errorToScale } from "../helpers/native.js";

const skip = skipWithoutNative;

after(() => {
  setNativeCausalSoftmax(true);
  restoreNativeThreads();
});

/** p and ds of Σ dp·p in float64, row r at position r mod T. */
function reference(s: Float32Array, dp: Float32Array, T: number, scale: number): { p: Float64Array; ds: Float64Array } {
  const p = new Float64Array(s.length);
  const ds = new Float64Array(s.length);
  for (let r = 0; r < s.length / T; r++) {
    const o = r * T;
    const n = (r % T) + 1;
    let mx = -Infinity;
    for (let j = 0; j < n; j++) mx = Math.max(mx, scale * s[o + j]);
    let sum = 0;
    for (let j = 0; j < n; j++) sum += Math.exp(scale * s[o + j] - mx);
    let dot = 0;
    for (let j = 0; j < n; j++) {
      p[o + j] = Math.exp(scale * s[o + j] - mx) / sum;
      dot += p[o + j] * dp[o + j];
    }
    for (let j = 0; j < n; j++) ds[o + j] = scale * p[o + j] * (dp[o + j] - dot);
  }
  return { p, ds };
}

for (const backend of ["wasm", "cpu"] as const) {
  for (const [g, T] of [
    [3, 13],
    [2, 20],
  ]) {
    test(`${backend}: the native causal softmax and its gradient equal a float64 reference and tfjs's kernels, ${g} heads of ${T}`, skip, async () => {
      loadedNative();
      await initBackend(backend);
      assert.ok(nativeCausalSoftmaxFor(backend), "the native pass is used on this backend");
      const scale = 1 / Math.sqrt(64);
      // Scores up to ±80: a row's largest must be subtracted before the exp.
      const sv = fill(g * T * T, 3).map((x) => 80 * x);
      const dpv = fill(g * T * T, 4);
      const [s, dp, mask] = [tf.tensor2d(sv, [g * T, T]), tf.tensor2d(dpv, [g * T, T]), causalMask(T)];
      const f = (x: tf.Tensor) => tf.sum(tf.mul(causalSoftmax(x as tf.Tensor2D, scale, mask), dp));
      const p = causalSoftmax(s, scale, mask).dataSync() as Float32Array;
      const ds = tf.grad(f)(s).dataSync() as Float32Array;
      const ref = reference(sv, dpv, T, scale);
      assert.ok(errorToScale(p, ref.p) < 2e-6, `probabilities off by ${errorToScale(p, ref.p)}`);
      assert.ok(errorToScale(ds, ref.ds) < 4e-6, `gradient off by ${errorToScale(ds, ref.ds)}`);
      for (let r = 0; r < g * T; r++) for (let j = (r % T) + 1; j < T; j++) assert.equal(p[r * T + j], 0, "nothing past the diagonal");
      setNativeCausalSoftmax(false);
      const plain = { p: causalSoftmax(s, scale, mask).dataSync() as Float32Array, ds: tf.grad(f)(s).dataSync() as Float32Array };
      setNativeCausalSoftmax(true);
      assert.ok(errorToScale(plain.p, ref.p) < 1e-5 && errorToScale(plain.ds, ref.ds) < 1e-5, "the reference agrees with tfjs's own kernels");
      tf.dispose([s, dp, mask]);
    });
  }
}

test("the native causal softmax gives the same bits on one thread and two", skip, () => {
  const g = loadedNative();
  // 14 heads of 200 (over 2^18 elements: split across threads, addon.cc runRows).
  const T = 200;
  const n = 14 * T * T;
  const [s, dp] = [fill(n, 11).map((x) => 20 * x), fill(n, 12)];
  const run = (threads: number) => {
    g.setThreads(threads);
    const out = { p: new Float32Array(n), ds: new Float32Array(n) };
    g.causalSoftmax!(s, out.p, T, 0.125);
    g.causalSoftmaxBackward!(out.p, dp, out.ds, T, 0.125);
    return out;
  };
  const one = run(1);
  const two = run(2);
  assert.deepEqual(two.p, one.p);
  assert.deepEqual(two.ds, one.ds);
  assert.ok(
    one.ds.some((v) => v !== 0),
    "a real result",
  );
});

test("the native causal softmax refuses partial rows, a bad scale and outputs that overlap", skip, () => {
  const g = loadedNative();
  const [s, p] = [fill(16, 1), new Float32Array(16)];
  assert.throws(() => g.causalSoftmax!(s, p, 5, 1), /not whole rows of 5/);
  assert.throws(() => g.causalSoftmax!(s, p, 4, 0), /scale a positive number/);
  assert.throws(() => g.causalSoftmax!(s, new Float32Array(15), 4, 1), /differ in length/);
  assert.throws(() => Reflect.apply(g.causalSoftmax!.bind(g), g, [s, p, 4]), /expects \(s, p, T, scale\)/);
  assert.throws(() => g.causalSoftmax!(s, s, 4, 1), /overlaps/);
  assert.throws(() => g.causalSoftmaxBackward!(p, s, s, 4, 1), /overlaps/);
});

test("the head's row softmax (softmaxRows) equals a float64 reference with its log-sum-exp, the same bits on one thread and two", skip, () => {
  const g = loadedNative();
  assert.equal(typeof g.softmaxRows, "function", "the addon has softmaxRows");
  // 37 rows of a vocabulary slice of 16,389 (past 2^18 elements: split over threads; a partial vector at each row's end).
  const [rows, cols] = [37, 16389];
  const z = fill(rows * cols, 21).map((x) => 30 * x);
  const run = (threads: number) => {
    g.setThreads(threads);
    const out = { p: new Float32Array(rows * cols), lse: new Float32Array(rows) };
    g.softmaxRows!(z, out.p, out.lse, cols);
    return out;
  };
  const two = run(2);
  const one = run(1);
  g.setThreads(g.hardwareThreads);
  assert.deepEqual(two.p, one.p);
  assert.deepEqual(two.lse, one.lse);
  for (let r = 0; r < rows; r++) {
    const row = Array.from(z.subarray(r * cols, (r + 1) * cols));
    const mx = Math.max(...row);
    const sum = row.reduce((a, v) => a + Math.exp(v - mx), 0);
    const lse = mx + Math.log(sum);
    assert.ok(Math.abs(one.lse[r] - lse) < 1e-5 * Math.max(1, Math.abs(lse)), `row ${r}: lse ${one.lse[r]} against ${lse}`);
    for (let j = 0; j < cols; j += 97) {
      const want = Math.exp(row[j] - lse);
      assert.ok(Math.abs(one.p[r * cols + j] - want) <= 1e-6 * want + 1e-12, `row ${r}, column ${j}: ${one.p[r * cols + j]} against ${want}`);
    }
  }
});

test("the head's row softmax refuses partial rows and outputs that overlap", skip, () => {
  const g = loadedNative();
  const [z, p] = [fill(12, 1), new Float32Array(12)];
  assert.throws(() => g.softmaxRows!(z, p, new Float32Array(2), 5), /not 2 rows of 5/);
  assert.throws(() => g.softmaxRows!(z, p, new Float32Array(3), 0), /cols must be a positive integer/);
  assert.throws(() => g.softmaxRows!(z, new Float32Array(11), new Float32Array(3), 4), /differ in length/);
  assert.throws(() => g.softmaxRows!(z, p, z.subarray(0, 3), 4), /overlaps/);
  // In place is fine: each value is read before it is written.
  const q = z.slice();
  g.softmaxRows!(q, q, new Float32Array(3), 4);
  const ref = new Float32Array(12);
  g.softmaxRows!(z, ref, new Float32Array(3), 4);
  assert.deepEqual(q, ref);
});
