/**
 * SwiGLU's native pass (trainer/model/swiglu.ts, trainer/native/gemm/activations.cc): its value
 * and both gradients equal a float64 reference, on the wasm and the js cpu backends, at the
 * inputs where σ saturates; the bits do not depend on the thread count; bad arguments are
 * refused with a clear error. The model tests (model.test.ts) check a whole block's gradients.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { nativeSwigluFor, setNativeSwiglu, swiglu } from "../../trainer/model/swiglu.js";
import { fill } from "../../common/random/fill.js";
import { skipWithoutNative, loadedNative, restoreNativeThreads } from "../helpers/native.js";

const skip = skipWithoutNative;

after(() => {
  setNativeSwiglu(true);
  restoreNativeThreads();
});

/** Gate values from −30 to 30, with the saturated and the tiny ones σ is hard at. */
function gateValues(n: number): Float32Array {
  const g = fill(n, 3).map((x) => 30 * x);
  g.set([-200, -88, -87.5, -20, -1e-8, 0, 1e-8, 20, 88, 200, 0.5, -0.5], 0);
  return g;
}

/** Largest |x − ref| / (|ref| + floor) over the arrays. */
function worst(x: Float32Array, ref: Float64Array, floor: number): number {
  let w = 0;
  for (let i = 0; i < ref.length; i++) w = Math.max(w, Math.abs(x[i] - ref[i]) / (Math.abs(ref[i]) + floor));
  return w;
}

for (const backend of ["wasm", "cpu"] as const) {
  test(`${backend}: native SwiGLU's value and gradients equal a float64 reference`, skip, async () => {
    loadedNative();
    await initBackend(backend);
    assert.ok(nativeSwigluFor(backend), "the native pass is used on this backend");
    // 3 × 37: not a whole number of 8-wide vectors (the tail's padded pass).
    const [rows, cols] = [3, 37];
    const n = rows * cols;
    const gv = gateValues(n);
    const uv = fill(n, 5);
    const wv = fill(n, 7);
    const [g, u, w] = [tf.tensor2d(gv, [rows, cols]), tf.tensor2d(uv, [rows, cols]), tf.tensor2d(wv, [rows, cols])];
    // Σ w·swiglu(g, u): dy = w for both gradients.
    const f = (a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(swiglu(a, b), w));
    const value = swiglu(g, u).dataSync() as Float32Array;
    const [dg, du] = tf
      .grads(f)([g, u])
      .map((t) => t.dataSync() as Float32Array);
    const ref = { y: new Float64Array(n), dg: new Float64Array(n), du: new Float64Array(n) };
    for (let i = 0; i < n; i++) {
      const [x, up, dy] = [gv[i], uv[i], wv[i]];
      const s = 1 / (1 + Math.exp(-x));
      ref.y[i] = x * s * up;
      ref.du[i] = dy * x * s;
      ref.dg[i] = dy * up * s * (1 + x * (1 - s));
    }
    // A few float32 roundings: 2e-6 of the value, or of 1e-30 where it underflows (σ(−200)).
    assert.ok(worst(value, ref.y, 1e-30) < 2e-6, `value off by ${worst(value, ref.y, 1e-30)}`);
    assert.ok(worst(du, ref.du, 1e-30) < 2e-6, `d/dup off by ${worst(du, ref.du, 1e-30)}`);
    assert.ok(worst(dg, ref.dg, 1e-30) < 4e-6, `d/dgate off by ${worst(dg, ref.dg, 1e-30)}`);
    assert.ok([...value, ...dg, ...du].every(Number.isFinite), "no NaN or infinity at saturated gates");
    // tfjs's kernels (the switch off) give the same up to their own rounding.
    setNativeSwiglu(false);
    const plain = tf
      .grads(f)([g, u])
      .map((t) => t.dataSync() as Float32Array);
    setNativeSwiglu(true);
    assert.ok(worst(plain[0], ref.dg, 1e-30) < 1e-4 && worst(plain[1], ref.du, 1e-30) < 1e-4, "the reference agrees with tfjs's own kernels");
    tf.dispose([g, u, w]);
  });
}

test("native SwiGLU gives the same bits on one thread and two, on a split that is not a whole vector", skip, () => {
  const g = loadedNative();
  // Over 2^19 elements: split across threads (addon.cc runElements), with a tail of 5 past whole vectors.
  const n = (1 << 19) + 13;
  const [gv, uv, dy] = [gateValues(n), fill(n, 11), fill(n, 12)];
  const run = (threads: number) => {
    g.setThreads(threads);
    const out = { y: new Float32Array(n), dg: new Float32Array(n), du: new Float32Array(n) };
    g.swiglu!(gv, uv, out.y);
    g.swigluBackward!(gv, uv, dy, out.dg, out.du);
    return out;
  };
  const one = run(1);
  const two = run(2);
  assert.deepEqual(two.y, one.y);
  assert.deepEqual(two.dg, one.dg);
  assert.deepEqual(two.du, one.du);
  assert.ok(
    one.y.some((v) => v !== 0),
    "a real result",
  );
});

test("native SwiGLU refuses arrays of different lengths and outputs that overlap", skip, () => {
  const g = loadedNative();
  const [a, b, c] = [new Float32Array(16), new Float32Array(16), new Float32Array(15)];
  assert.throws(() => g.swiglu!(a, b, c), /differ in length \(16 and 15\)/);
  // A call from JavaScript that the type would refuse: the addon checks its arguments itself.
  assert.throws(() => Reflect.apply(g.swiglu!.bind(g), g, [a, b]), /expects \(g, u, out\)/);
  const heap = new Float32Array(40);
  // The output 4 floats past the gate: a value would be written before it is read.
  assert.throws(() => g.swiglu!(heap.subarray(0, 16), b, heap.subarray(4, 20)), /overlaps/);
  // In place (the output is the up projection itself) is fine.
  const up = fill(16, 2);
  const gate = fill(16, 3);
  const expect = new Float32Array(16);
  g.swiglu!(gate, up, expect);
  g.swiglu!(gate, up, up);
  assert.deepEqual(up, expect);
  const [dg, du] = [new Float32Array(16), new Float32Array(16)];
  assert.throws(() => g.swigluBackward!(a, b, b, dg, dg), /overlaps/);
  g.swigluBackward!(gate, up, up, dg, du);
});
