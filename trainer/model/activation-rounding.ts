/**
 * Optional emulation of what llama.cpp's CPU backend does to activations before a matrix
 * product with a non-F32 weight: it converts the activation row to the weight type's
 * "vec_dot_type" and multiplies in that type. F16 weights → activations rounded to f16;
 * Q8_0 / Q4_0 / Q5_0 → Q8_0 (blocks of 32, f16 scale amax/127, round to nearest even);
 * Q4_1 / Q5_1 → Q8_1 (same values); K-quants → Q8_K (blocks of 256, f32 scale −max/127).
 *
 * With it our forward reproduces llama.cpp's log-probs on quantized bases far more closely
 * (see test/trainer/parity-quant.test.ts). The gradient passes straight through (the rounding
 * is treated as identity), so it can also be used in training. Runs on the CPU side
 * (dataSync), so it is slow on large models: a parity/diagnostic tool, off by default.
 */
import * as tf from "@tensorflow/tfjs-core";
import { GgmlType } from "../../models/gguf/types.js";
import { f16BitsToF32, f32ToF16Bits } from "../../models/gguf/writer.js";

export type ActivationRounding = "none" | "llama.cpp-cpu";

type Rounder = (row: Float32Array, out: Float32Array) => void;

const f16 = (x: number): number => f16BitsToF32(f32ToF16Bits(x));

/** Round half to even, as ggml's nearest_int and _mm256_round_ps(NEAREST) do. */
function rint(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function q8_0(row: Float32Array, out: Float32Array): void {
  for (let s = 0; s < row.length; s += 32) {
    let amax = 0;
    for (let j = s; j < s + 32; j++) amax = Math.max(amax, Math.abs(row[j]));
    const d = f16(Math.fround(amax / 127));
    const id = amax ? Math.fround(127 / amax) : 0;
    for (let j = s; j < s + 32; j++) out[j] = rint(Math.fround(row[j] * id)) * d;
  }
}

function q8_K(row: Float32Array, out: Float32Array): void {
  for (let s = 0; s < row.length; s += 256) {
    let amax = 0;
    let max = 0;
    for (let j = s; j < s + 256; j++) {
      const ax = Math.abs(row[j]);
      if (ax > amax) {
        amax = ax;
        max = row[j];
      }
    }
    if (!amax) {
      out.fill(0, s, s + 256);
      continue;
    }
    const iscale = Math.fround(-127 / max);
    const d = Math.fround(1 / iscale);
    for (let j = s; j < s + 256; j++) out[j] = Math.min(127, rint(Math.fround(iscale * row[j]))) * d;
  }
}

function roundF16(row: Float32Array, out: Float32Array): void {
  for (let j = 0; j < row.length; j++) out[j] = f16(row[j]);
}

function roundBF16(row: Float32Array, out: Float32Array): void {
  const u = new Uint32Array(row.buffer, row.byteOffset, row.length);
  const o = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let j = 0; j < row.length; j++) {
    const b = u[j];
    o[j] = ((b + 0x7fff + ((b >>> 16) & 1)) & 0xffff0000) >>> 0;
  }
}

function rounderFor(type: GgmlType): Rounder | null {
  switch (type) {
    case GgmlType.F16:
      return roundF16;
    case GgmlType.BF16:
      return roundBF16;
    case GgmlType.Q8_0:
    case GgmlType.Q4_0:
    case GgmlType.Q5_0:
    case GgmlType.Q4_1:
    case GgmlType.Q5_1:
      return q8_0;
    case GgmlType.Q2_K:
    case GgmlType.Q3_K:
    case GgmlType.Q4_K:
    case GgmlType.Q5_K:
    case GgmlType.Q6_K:
      return q8_K;
    default:
      return null;
  }
}

/** x [N, K] rounded as llama.cpp's CPU matmul with a `weightType` weight sees it. */
export function roundActivations(x: tf.Tensor2D, weightType: GgmlType): tf.Tensor2D {
  const r = rounderFor(weightType);
  if (!r) return x;
  const [N, K] = x.shape;
  const f = tf.customGrad((xIn: tf.Tensor | tf.GradSaveFunc) => {
    const src = (xIn as tf.Tensor).dataSync() as Float32Array;
    const dst = new Float32Array(src.length);
    for (let i = 0; i < N; i++) r(src.subarray(i * K, (i + 1) * K), dst.subarray(i * K, (i + 1) * K));
    // Straight-through: d(round(x))/dx taken as 1.
    return { value: tf.tensor2d(dst, [N, K]), gradFunc: (dy: tf.Tensor) => tf.clone(dy) };
  });
  return f(x) as tf.Tensor2D;
}
