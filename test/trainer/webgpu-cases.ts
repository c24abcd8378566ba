/**
 * Computations run on one tfjs backend in a child process (test/trainer/webgpu-child.ts) and
 * compared across backends by backend-webgpu.test.ts. Inputs come from a seeded generator, not
 * tf.random, so every backend sees the same numbers; results are read with `await data()`
 * (the only read tfjs-backend-webgpu supports under Node).
 */
import * as tf from "@tensorflow/tfjs-core";
import { releaseFreeGpuBuffers } from "../../trainer/backend.js";

/** Deterministic uniform floats in [lo, hi), rounded to float32. */
export function uniform(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // mulberry32
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = lo + (hi - lo) * (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  }
  return out;
}

export const MATMUL_N = 256;
export const matmulInputs = () => ({ a: uniform(MATMUL_N * MATMUL_N, 1), b: uniform(MATMUL_N * MATMUL_N, 2) });

export type Results = Record<string, number[]>;

async function read(out: Results, name: string, t: tf.Tensor): Promise<void> {
  out[name] = Array.from(await t.data());
}

/** The ops a llama forward and its backward use, one result per name. */
export async function opCases(): Promise<Results> {
  const out: Results = {};
  const T = 8; // tokens
  const D = 32; // model width
  const H = 4; // heads
  const hd = D / H;
  const V = 48; // vocabulary
  const F = 64; // MLP width
  const x = tf.tensor2d(uniform(T * D, 10), [T, D]);
  const y = tf.tensor2d(uniform(T * D, 11, 0.5, 2), [T, D]);
  const logits = tf.tensor2d(uniform(T * V, 12, -6, 6), [T, V]);
  const ids = tf.tensor1d([3, 0, 47, 5, 5, 12, 30, 1], "int32");
  const cases: Array<[string, () => tf.Tensor]> = [
    ["add", () => tf.add(x, y)],
    ["sub-broadcast", () => tf.sub(x, tf.slice(y, [0, 0], [1, D]))],
    ["mul", () => tf.mul(x, y)],
    ["div", () => tf.div(x, y)],
    ["neg-square", () => tf.square(tf.neg(x))],
    ["exp", () => tf.exp(x)],
    ["log", () => tf.log(y)],
    ["sqrt", () => tf.sqrt(y)],
    ["rsqrt", () => tf.rsqrt(y)],
    ["sigmoid", () => tf.sigmoid(tf.mul(x, 4))],
    ["silu", () => tf.mul(x, tf.sigmoid(x))],
    ["softmax", () => tf.softmax(logits)],
    ["logSoftmax", () => tf.logSoftmax(logits)],
    ["logSumExp", () => tf.logSumExp(logits, -1)],
    ["logSumExp-keepDims", () => tf.logSumExp(logits, 1, true)],
    ["sum-axis0", () => tf.sum(x, 0)],
    ["mean-axis1", () => tf.mean(tf.square(x), 1, true)],
    ["max-axis1", () => tf.max(logits, 1)],
    ["gather-rows", () => tf.gather(tf.reshape(tf.tile(x, [6, 1]), [V, D]), ids)],
    ["gather-axis1", () => tf.gather(logits, tf.tensor1d([0, 7, 47], "int32"), 1)],
    ["oneHot", () => tf.oneHot(ids, V)],
    ["oneHot-dot", () => tf.sum(tf.mul(tf.oneHot(ids, V), logits), 1)],
    ["concat-axis0", () => tf.concat([x, y, x], 0)],
    ["concat-axis1", () => tf.concat([tf.slice(x, [0, 0], [T, 5]), y, tf.slice(x, [0, 5], [T, D - 5])], 1)],
    [
      "concat-many",
      () =>
        tf.concat(
          Array.from({ length: 9 }, (_, i) => tf.slice(x, [0, i], [T, 1])),
          1,
        ),
    ],
    ["slice", () => tf.slice(x, [2, 3], [4, 7])],
    [
      "pad",
      () =>
        tf.pad(
          x,
          [
            [1, 2],
            [0, 3],
          ],
          -1.5,
        ),
    ],
    ["transpose", () => tf.transpose(tf.reshape(x, [T, H, hd]), [1, 0, 2])],
    ["stack-unstack", () => tf.stack(tf.unstack(x).reverse())],
    ["expandDims", () => tf.expandDims(tf.sum(x, 1), 1)],
    ["clipByValue", () => tf.clipByValue(logits, -2, 3)],
    ["minimum-maximum", () => tf.add(tf.minimum(x, 0.25), tf.maximum(x, -0.25))],
    ["less-where", () => tf.where(tf.less(x, y), x, y)],
    ["cast", () => tf.cast(tf.cast(tf.mul(logits, 3), "int32"), "float32")],
    ["addN", () => tf.addN([x, y, x, y, x])],
    // More inputs than a shader may bind storage buffers (8–16): the trainer's gradient norm.
    ["addN-many", () => tf.addN(Array.from({ length: 40 }, (_, i) => tf.mul(tf.sum(tf.square(x)), i + 1)))],
    ["matMul", () => tf.matMul(x, tf.transpose(y))],
    ["matMul-transposeA", () => tf.matMul(x, y, true, false)],
    ["matMul-transposeB", () => tf.matMul(x, y, false, true)],
    ["matMul-batched", () => tf.matMul(tf.reshape(x, [H, T, hd]), tf.reshape(y, [H, hd, T]))],
    ["matMul-vector", () => tf.matMul(tf.slice(x, [0, 0], [1, D]), tf.reshape(tf.slice(logits, [0, 0], [4, 8]), [D, 1]))],
  ];
  for (const [name, f] of cases) {
    const t = tf.tidy(f);
    await read(out, name, t);
    t.dispose();
  }
  const top = tf.topk(logits, 5);
  await read(out, "topk-values", top.values);
  await read(out, "topk-indices", top.indices);
  tf.dispose([top.values, top.indices]);

  // One llama block (RMSNorm, RoPE, causal attention, SwiGLU MLP) with LoRA-style low-rank
  // variables, a logSumExp cross-entropy at the end, and its gradients.
  const W = (seed: number, r: number, c: number, s = 0.2) => tf.tensor2d(uniform(r * c, seed, -s, s), [r, c]);
  const wq = W(20, D, D);
  const wk = W(21, D, D);
  const wv = W(22, D, D);
  const wo = W(23, D, D);
  const wg = W(24, D, F);
  const wu = W(25, D, F);
  const wd = W(26, F, D);
  const wout = W(27, D, V);
  const norm = tf.tensor1d(uniform(D, 28, 0.8, 1.2));
  const loraA = tf.variable(W(29, D, 4, 0.3), true, "loraA");
  const loraB = tf.variable(W(30, 4, D, 0.3), true, "loraB");
  const pos = Array.from({ length: T }, (_, t) => t);
  const freq = Array.from({ length: hd / 2 }, (_, i) => Math.pow(10000, (-2 * i) / hd));
  const cos = tf.tensor2d(
    pos.flatMap((p) => freq.map((f) => Math.cos(p * f))),
    [T, hd / 2],
  );
  const sin = tf.tensor2d(
    pos.flatMap((p) => freq.map((f) => Math.sin(p * f))),
    [T, hd / 2],
  );
  const mask = tf.tensor2d(
    pos.flatMap((i) => pos.map((j) => (j <= i ? 0 : -1e9))),
    [T, T],
  );
  const targets = tf.tensor1d([5, 9, 1, 44, 0, 12, 7, 30], "int32");

  // Custom gradient as the trainer's frozen matmuls use it: dy·Wᵀ only, no grad for W.
  const frozen = (a: tf.Tensor2D, w: tf.Tensor2D) =>
    tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const [aa, save] = args as [tf.Tensor2D, tf.GradSaveFunc];
      save([w]);
      return { value: tf.matMul(aa, w), gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.matMul(dy, saved[0], false, true) };
    })(a) as tf.Tensor2D;
  const rms = (a: tf.Tensor2D) => tf.mul<tf.Tensor2D>(tf.mul(a, tf.rsqrt(tf.add(tf.mean(tf.square(a), 1, true), 1e-5))), norm);
  const rope = (a: tf.Tensor2D) => {
    const r = tf.reshape(a, [T, H, hd / 2, 2]);
    const even = tf.reshape(tf.slice(r, [0, 0, 0, 0], [T, H, hd / 2, 1]), [T, H, hd / 2]);
    const odd = tf.reshape(tf.slice(r, [0, 0, 0, 1], [T, H, hd / 2, 1]), [T, H, hd / 2]);
    const c = tf.expandDims(cos, 1);
    const s = tf.expandDims(sin, 1);
    const re = tf.sub(tf.mul(even, c), tf.mul(odd, s));
    const ro = tf.add(tf.mul(even, s), tf.mul(odd, c));
    return tf.reshape<tf.Rank.R2>(tf.stack([re, ro], 3), [T, D]);
  };
  const heads = (a: tf.Tensor2D) => tf.transpose<tf.Tensor3D>(tf.reshape(a, [T, H, hd]), [1, 0, 2]);
  const block = () => {
    const h = rms(x);
    const q = rope(tf.add<tf.Tensor2D>(frozen(h, wq), tf.matMul(tf.matMul(h, loraA), loraB)));
    const k = rope(frozen(h, wk));
    const v = frozen(h, wv);
    const scores = tf.add(tf.div(tf.matMul(heads(q), heads(k), false, true), Math.sqrt(hd)), mask);
    const att = tf.matMul(tf.softmax(scores), heads(v));
    const merged = tf.reshape<tf.Rank.R2>(tf.transpose(att, [1, 0, 2]), [T, D]);
    const x1 = tf.add<tf.Tensor2D>(x, frozen(merged, wo));
    const h2 = rms(x1);
    const g = frozen(h2, wg);
    const mlp = frozen(tf.mul<tf.Tensor2D>(tf.mul(g, tf.sigmoid(g)), frozen(h2, wu)), wd);
    const x2 = tf.add<tf.Tensor2D>(x1, mlp);
    const lg = tf.matMul(rms(x2), wout);
    const picked = tf.sum(tf.mul(tf.oneHot(targets, V), lg), 1);
    return tf.mean<tf.Scalar>(tf.sub(tf.logSumExp(lg, 1), picked));
  };
  const { value, grads } = tf.variableGrads(block, [loraA, loraB]);
  await read(out, "block-loss", value);
  await read(out, "block-grad-loraA", grads[loraA.name]);
  await read(out, "block-grad-loraB", grads[loraB.name]);
  tf.dispose([value, grads[loraA.name], grads[loraB.name]]);

  tf.dispose([x, y, logits, ids, wq, wk, wv, wo, wg, wu, wd, wout, norm, loraA, loraB, cos, sin, mask, targets]);
  return out;
}

/** tf.grad and tf.variableGrads through matMul → softmax → log. */
export async function gradCases(): Promise<Results> {
  const out: Results = {};
  const x = tf.tensor2d(uniform(6 * 16, 40), [6, 16]);
  const w0 = tf.tensor2d(uniform(16 * 10, 41), [16, 10]);
  const oneHot = tf.oneHot(tf.tensor1d([0, 3, 9, 2, 2, 7], "int32"), 10);
  const loss = (xx: tf.Tensor, ww: tf.Tensor) =>
    tf.neg(tf.mean(tf.sum(tf.mul(oneHot, tf.log(tf.softmax(tf.matMul(xx as tf.Tensor2D, ww as tf.Tensor2D)))), 1))) as tf.Scalar;
  const dx = tf.grad((xx: tf.Tensor) => loss(xx, w0))(x);
  await read(out, "grad-x", dx);
  const w = tf.variable(w0, true, "w");
  const { value, grads } = tf.variableGrads(() => loss(x, w), [w]);
  await read(out, "variableGrads-loss", value);
  await read(out, "variableGrads-w", grads[w.name]);
  tf.dispose([x, w0, oneHot, dx, w, value, grads[w.name]]);
  return out;
}

export async function matmulCase(): Promise<number[]> {
  const { a, b } = matmulInputs();
  const c = tf.tidy(() => tf.matMul(tf.tensor2d(a, [MATMUL_N, MATMUL_N]), tf.tensor2d(b, [MATMUL_N, MATMUL_N])));
  const v = Array.from(await c.data());
  c.dispose();
  return v;
}

export interface MemoryTrace {
  /** tf.memory() after each of 20 steps (each ending in an awaited read). */
  steps: Array<{ numTensors: number; numBytes: number; numBytesInGPU?: number }>;
  /** numBytesInGPU before, while holding a 1 MiB tensor, and after disposing it. */
  holdRelease?: [number, number, number];
  /** After products of 12 shapes: [in use, allocated (pool included)], bytes released, then again. */
  pool?: { before: [number, number]; released: number; after: [number, number] };
}

/** 20 steps of a small training computation: gradients, an update, a loss read. */
export async function memoryTrace(): Promise<MemoryTrace> {
  const gpuBytes = () => (tf.memory() as { numBytesInGPU?: number }).numBytesInGPU;
  const x = tf.tensor2d(uniform(16 * 32, 50), [16, 32]);
  const w = tf.variable(tf.tensor2d(uniform(32 * 8, 51, -0.3, 0.3), [32, 8]), true, "mem-w");
  const steps: MemoryTrace["steps"] = [];
  for (let i = 0; i < 20; i++) {
    const loss = tf.tidy(() => {
      const { value, grads } = tf.variableGrads(() => tf.mean<tf.Scalar>(tf.logSumExp(tf.matMul(x, w), 1)), [w]);
      w.assign(tf.sub(w, tf.mul(grads[w.name], 0.1)));
      return value;
    });
    await loss.data();
    loss.dispose();
    const m = tf.memory();
    steps.push({ numTensors: m.numTensors, numBytes: m.numBytes, numBytesInGPU: gpuBytes() });
  }
  tf.dispose([x, w]);
  let holdRelease: MemoryTrace["holdRelease"];
  const before = gpuBytes();
  if (before !== undefined) {
    const big = tf.tidy(() => tf.add(tf.tensor1d(uniform(1 << 18, 52)), 1)); // 1 MiB of float32
    await big.data();
    const holding = gpuBytes()!;
    big.dispose();
    // Buffers used by queued commands are freed at the next submit; a read submits.
    const s = tf.tidy(() => tf.add(tf.scalar(1), 1));
    await s.data();
    s.dispose();
    holdRelease = [before, holding, gpuBytes()!];
  }
  let pool: MemoryTrace["pool"];
  if (before !== undefined) {
    const w = tf.tensor2d(uniform(64 * 64, 53), [64, 64]);
    for (let t = 1; t <= 12; t++) {
      const y = tf.tidy(() => tf.softmax(tf.matMul(tf.tensor2d(uniform(t * 8 * 64, 54 + t), [t * 8, 64]), w)));
      await y.data();
      y.dispose();
    }
    w.dispose();
    const m = () => tf.memory() as unknown as { numBytesInGPU: number; numBytesAllocatedInGPU: number };
    const b = m();
    const released = releaseFreeGpuBuffers();
    const a = m();
    pool = { before: [b.numBytesInGPU, b.numBytesAllocatedInGPU], released, after: [a.numBytesInGPU, a.numBytesAllocatedInGPU] };
  }
  return { steps, holdRelease, pool };
}
