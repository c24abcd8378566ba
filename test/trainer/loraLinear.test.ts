/**
 * The fused LoRA linear layer (trainer/model/lora-linear.ts): x·Wᵀ + scale·(x·A)·B with the LoRA
 * branch added into the native products, forward and backward, gives the value and the
 * gradients for x, A and B of tfjs's composition (frozenLinear + mm + add), on the wasm and js cpu
 * backends; and the products' `accumulate` adds to what the output held.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { hostMatrix, type NativeGemm } from "../../trainer/native/gemm.js";
import { frozenLinear, mm } from "../../trainer/model/fast-matmul.js";
import { hostLoraLinear, setFusedLora } from "../../trainer/model/lora-linear.js";
import { fill } from "../../common/random/fill.js";
import { skipWithoutNative, loadedNative } from "../helpers/native.js";

const skip = skipWithoutNative;

function loaded(): NativeGemm {
  const g = loadedNative();
  assert.equal(g.accumulates, true, "this build's products add into their output");
  return g;
}

after(() => setFusedLora(true));

/** Largest |x − ref| relative to the reference's largest magnitude. */
function relErr(x: Float32Array, ref: Float32Array): number {
  let w = 0;
  let mag = 0;
  for (let i = 0; i < ref.length; i++) {
    w = Math.max(w, Math.abs(x[i] - ref[i]));
    mag = Math.max(mag, Math.abs(ref[i]));
  }
  return w / mag;
}

for (const backend of ["wasm", "cpu"] as const) {
  test(`${backend}: the fused LoRA linear gives tfjs's composition, value and the gradients for x, A and B`, skip, async () => {
    loaded();
    await initBackend(backend);
    // Rows past a 6-row tile, an output past a 16-column tile and a thread split, the rank 16.
    const [M, K, N, r, scale] = [37, 72, 203, 16, 2];
    const W = hostMatrix(fill(N * K, 1), N, K);
    const x = tf.tensor2d(fill(M * K, 2), [M, K]);
    const A = tf.tensor2d(fill(K * r, 3), [K, r]);
    // B non-zero (a fresh adapter's is zero): the LoRA branch must count.
    const B = tf.tensor2d(fill(r * N, 4), [r, N]);
    const probe = tf.tensor2d(fill(M * N, 5), [M, N]);
    const composed = (xi: tf.Tensor2D, a: tf.Tensor2D, b: tf.Tensor2D) => tf.add<tf.Tensor2D>(frozenLinear(xi, W), mm(tf.mul(mm(xi, a), scale), b));
    const fused = (xi: tf.Tensor2D, a: tf.Tensor2D, b: tf.Tensor2D) => {
      const y = hostLoraLinear(xi, W, a, b, scale, () => W);
      assert.ok(y, "the fused layer runs");
      return y;
    };
    const run = (layer: typeof composed) => {
      const value = layer(x, A, B).dataSync() as Float32Array;
      const grads = tf.grads((xi: tf.Tensor, a: tf.Tensor, b: tf.Tensor) =>
        tf.sum(tf.mul(layer(xi as tf.Tensor2D, a as tf.Tensor2D, b as tf.Tensor2D), probe)),
      )([x, A, B]);
      return [value, ...grads.map((t) => t.dataSync() as Float32Array)];
    };
    const ours = run(fused);
    const theirs = run(composed);
    const names = ["value", "d/dx", "d/dA", "d/dB"];
    for (let i = 0; i < 4; i++) assert.ok(relErr(ours[i], theirs[i]) < 1e-5, `${names[i]} off by ${relErr(ours[i], theirs[i])}`);
    // Without the branch the value differs: the comparison sees the LoRA part.
    const frozenOnly = frozenLinear(x, W).dataSync() as Float32Array;
    assert.ok(relErr(frozenOnly, theirs[0]) > 1e-2, "the LoRA branch changes the output");
    setFusedLora(false);
    assert.equal(
      hostLoraLinear(x, W, A, B, scale, () => W),
      null,
      "switched off, the caller composes the layer",
    );
    setFusedLora(true);
    tf.dispose([x, A, B, probe]);
  });
}

test("the native products add into their output with accumulate, in every form and route", skip, () => {
  const g = loaded();
  // nt's panels ([9, 40]·[300, 40]ᵀ), nt's narrow route ([64, 40]·[16, 40]ᵀ), nn, tn, and k = 0.
  for (const [form, m, n, k] of [
    ["nt", 9, 300, 40],
    ["nt", 64, 16, 40],
    ["nn", 9, 300, 40],
    ["tn", 9, 300, 40],
    ["nn", 5, 7, 0],
  ] as const) {
    const a = fill(m * k, 6);
    const b = fill(n * k, 7);
    const product = new Float32Array(m * n);
    g[form](a, b, product, m, n, k);
    const start = fill(m * n, 8);
    const c = Float32Array.from(start);
    g[form](a, b, c, m, n, k, true);
    let worst = 0;
    for (let i = 0; i < c.length; i++) worst = Math.max(worst, Math.abs(c[i] - (start[i] + product[i])));
    assert.ok(worst < 1e-5, `${form} [${m}, ${n}, ${k}]: c + a·b off by ${worst}`);
    assert.throws(() => (g[form] as unknown as (...args: unknown[]) => void)(a, b, c, m, n, k, 1), /accumulate must be a boolean/);
  }
});
