/**
 * Why the trainer's model avoids transposed and batched tf.matMul: on the active backend
 * (wasm here), times each product form against a plain 2-D matMul measured in the same run,
 * and a frozen linear layer's forward+backward with tf autodiff (transposeB) against
 * frozenLinear (both with weights in GGUF layout [out, in]).
 *   node --import tsx bench/trainer-matmul.ts
 */
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../trainer/backend.js";
import { frozenLinear } from "../trainer/model/fast-matmul.js";

const choice = await initBackend(process.argv[2]);
console.log(`backend: ${choice.name} (${choice.device})`);

/** Median ms of `reps` runs (each synced with dataSync), after one warm-up. */
function time(f: () => tf.Tensor, reps = 7): number {
  tf.tidy(() => void f().dataSync());
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    tf.tidy(() => void f().dataSync());
    ms.push(performance.now() - t0);
  }
  return ms.sort((a, b) => a - b)[Math.floor(reps / 2)];
}

const N = 256;
const D = 768;
const x = tf.randomNormal<tf.Rank.R2>([N, D], 0, 1, "float32", 1);
const w = tf.randomNormal<tf.Rank.R2>([D, D], 0, 0.02, "float32", 2);
const g = tf.randomNormal<tf.Rank.R2>([N, 16], 0, 1, "float32", 3);
const flops = 2 * N * D * D;

const base = time(() => tf.matMul(x, w));
console.log(`baseline x·W [${N},${D}]x[${D},${D}]: ${base.toFixed(1)} ms = ${(flops / base / 1e6).toFixed(2)} GFLOP/s`);
const rows: Array<[string, number, number]> = [
  ["x·Wᵀ (transposeB flag)", time(() => tf.matMul(x, w, false, true), 3), base],
  ["(W·xᵀ)ᵀ (same product, plain)", time(() => tf.transpose(tf.matMul(w, tf.transpose(x)))), base],
  ["xᵀ·g (transposeA flag, LoRA grad)", time(() => tf.matMul(x, g, true, false), 3), time(() => tf.transpose(tf.matMul(tf.transpose(g), x)))],
];
const H = 16;
const T = 256;
const q = tf.randomNormal([H, T, 64], 0, 1, "float32", 4);
const k = tf.randomNormal([H, 64, T], 0, 1, "float32", 5);
const qs = tf.unstack(q);
const ks = tf.unstack(k);
rows.push(["batched [16,256,64]x[16,64,256] vs loop of 2-D", time(() => tf.matMul(q, k), 3), time(() => tf.stack(qs.map((qi, i) => tf.matMul(qi, ks[i]))))]);

const wOI = tf.transpose<tf.Tensor2D>(w); // GGUF layout [out, in]
const v = tf.variable(tf.randomNormal([N, D], 0, 1, "float32", 6));
const oldWay = time(() => {
  const r = tf.variableGrads(() => tf.sum<tf.Scalar>(tf.matMul(tf.mul(v, x), wOI, false, true)), [v]);
  return r.grads[v.name];
}, 3);
const newWay = time(() => {
  const r = tf.variableGrads(() => tf.sum<tf.Scalar>(frozenLinear(tf.mul<tf.Tensor2D>(v, x), wOI)), [v]);
  return r.grads[v.name];
});
rows.push(["frozen linear fwd+bwd: autodiff vs frozenLinear", oldWay, newWay]);

for (const [name, slow, fast] of rows) console.log(`${name}: ${slow.toFixed(1)} ms vs ${fast.toFixed(1)} ms → ${(slow / fast).toFixed(1)}x`);
