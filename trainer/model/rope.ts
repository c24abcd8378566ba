/**
 * Rotary position embedding as llama.cpp applies it: angle θ_i(p) = p·freqScale·base^(−2i/nRot)
 * for i < nRot/2. "normal" mode rotates adjacent pairs (x₂ᵢ, x₂ᵢ₊₁) (llama); "neox" rotates
 * (xᵢ, xᵢ₊ₙᵣₒₜ/₂) (qwen2, qwen3). Dimensions past nRot pass through unchanged.
 *
 * On the CPU backends where the native addon is built (trainer/native/gemm.ts) the rotation is
 * one pass, and its gradient the same pass by −θ, where tfjs runs ~10 kernels each way for the
 * queries and keys of every block (issue 31: slices, multiplies, concat and their gradients, ~4%
 * of a 1 × 128 step of the 0.5B shape). Elsewhere tfjs's kernels, as before.
 */
import * as tf from "@tensorflow/tfjs-core";
import type { ModelConfig } from "../../models/arch/config.js";
import { nativeGemm, nativeProductsFor, nativeRopeOf, type NativeRope } from "../native/gemm.js";
import { readF32, writeF32 } from "../wasm/heap.js";

let nativeOn = true;
/** The native pass (default, where built) or tfjs's kernels: for bench/trainer-profile.ts --ab and the tests. */
export function setNativeRope(on: boolean): void {
  nativeOn = on;
}

/** The addon's rotation where this backend uses the native kernels and the switch is on, else null. */
export function nativeRopeFor(backend: string): NativeRope["rope"] | null {
  return nativeOn && nativeProductsFor(backend) ? (nativeRopeOf(nativeGemm())?.rope ?? null) : null;
}

/** cos and sin [T, nRot/2] for positions 0..T-1 as flat arrays (ggml's f32 theta steps; see ropeTables). */
function ropeArrays(config: ModelConfig, T: number, freqFactors?: Float32Array): { cos: Float32Array; sin: Float32Array } {
  const half = config.ropeDim / 2;
  const cos = new Float32Array(T * half);
  const sin = new Float32Array(T * half);
  const thetaScale = Math.fround(Math.pow(config.ropeBase, -2 / config.ropeDim));
  for (let p = 0; p < T; p++) {
    // ggml starts at θ = p and multiplies by theta_scale in f32 for each pair.
    let theta = Math.fround(p);
    for (let i = 0; i < half; i++) {
      const ff = freqFactors ? freqFactors[i] : 1;
      const t = Math.fround(Math.fround(theta / ff) * config.ropeFreqScale);
      cos[p * half + i] = Math.cos(t);
      sin[p * half + i] = Math.sin(t);
      theta = Math.fround(theta * thetaScale);
    }
  }
  return { cos, sin };
}

/**
 * cos and sin tables [T, nRot/2] for positions 0..T-1, computed like ggml (f32 theta steps);
 * `freqFactors` (Llama 3.x `rope_freqs.weight`) divide each pair's angle, as ggml does.
 */
export function ropeTables(config: ModelConfig, T: number, freqFactors?: Float32Array): { cos: tf.Tensor2D; sin: tf.Tensor2D } {
  const { cos, sin } = ropeArrays(config, T, freqFactors);
  const half = config.ropeDim / 2;
  return { cos: tf.tensor2d(cos, [T, half]), sin: tf.tensor2d(sin, [T, half]) };
}

/**
 * cos and sin per row [Σ lens, nRot/2] of sequences laid one after another, each sequence's
 * positions starting at 0 (a packed batch; a padded one is `lens` all equal to its width).
 */
export function ropeRows(config: ModelConfig, lens: readonly number[], freqFactors?: Float32Array): { cos: tf.Tensor2D; sin: tf.Tensor2D } {
  const half = config.ropeDim / 2;
  const table = ropeArrays(config, Math.max(0, ...lens), freqFactors);
  const rows = lens.reduce((a, l) => a + l, 0);
  const cos = new Float32Array(rows * half);
  const sin = new Float32Array(rows * half);
  let off = 0;
  for (const len of lens) {
    cos.set(table.cos.subarray(0, len * half), off * half);
    sin.set(table.sin.subarray(0, len * half), off * half);
    off += len;
  }
  return { cos: tf.tensor2d(cos, [rows, half]), sin: tf.tensor2d(sin, [rows, half]) };
}

/**
 * Rotates x [B, T, H, D] with tables for T positions (broadcast over batch and heads): a
 * padded grid with ropeTables, or a packed batch as [1, rows, H, D] with ropeRows.
 */
export function applyRope(x: tf.Tensor4D, cos: tf.Tensor2D, sin: tf.Tensor2D, config: ModelConfig): tf.Tensor4D {
  const native = x.dtype === "float32" ? nativeRopeFor(tf.getBackend()) : null;
  if (native) return nativeRope(native, x, cos, sin, config);
  const [B, T, H, D] = x.shape;
  const nRot = config.ropeDim;
  const half = nRot / 2;
  const c = tf.reshape(cos, [1, T, 1, half]);
  const s = tf.reshape(sin, [1, T, 1, half]);
  const rot = nRot === D ? x : tf.slice(x, [0, 0, 0, 0], [B, T, H, nRot]);
  let out: tf.Tensor4D;
  if (config.ropeMode === "neox") {
    const x1 = tf.slice(rot, [0, 0, 0, 0], [B, T, H, half]);
    const x2 = tf.slice(rot, [0, 0, 0, half], [B, T, H, half]);
    out = tf.concat([tf.sub(tf.mul(x1, c), tf.mul(x2, s)), tf.add(tf.mul(x1, s), tf.mul(x2, c))], 3) as tf.Tensor4D;
  } else {
    // Adjacent pairs (x₂ᵢ, x₂ᵢ₊₁) as the last axis of a rank-3 view (tfjs-webgpu cannot run rank-5 ops).
    const pairs = tf.reshape(rot, [B * T * H, half, 2]);
    const x0 = tf.reshape(tf.slice(pairs, [0, 0, 0], [B * T * H, half, 1]), [B, T, H, half]);
    const x1 = tf.reshape(tf.slice(pairs, [0, 0, 1], [B * T * H, half, 1]), [B, T, H, half]);
    const y0 = tf.reshape(tf.sub(tf.mul(x0, c), tf.mul(x1, s)), [B * T * H, half]);
    const y1 = tf.reshape(tf.add(tf.mul(x0, s), tf.mul(x1, c)), [B * T * H, half]);
    out = tf.reshape(tf.stack([y0, y1], 2), [B, T, H, nRot]);
  }
  if (nRot === D) return out;
  return tf.concat<tf.Tensor4D>([out, tf.slice(x, [0, 0, 0, nRot], [B, T, H, D - nRot])], 3);
}

type In = tf.Tensor | tf.GradSaveFunc;

/** applyRope in the addon: x rotated by θ, its gradient dy rotated by −θ. */
function nativeRope(rope: NativeRope["rope"], x: tf.Tensor4D, cos: tf.Tensor2D, sin: tf.Tensor2D, config: ModelConfig): tf.Tensor4D {
  const [B, T, H, D] = x.shape;
  const neox = config.ropeMode === "neox";
  const rotate = (t: tf.Tensor, c: tf.Tensor, s: tf.Tensor, inverse: boolean) =>
    writeF32<tf.Rank.R4>(t.shape, (out) => rope(readF32(t), readF32(c), readF32(s), out, B * T, T, H, D, config.ropeDim, neox, inverse));
  const f = tf.customGrad((xi: In, save: In) => {
    // The tables are saved with the tape: a kept block's backward runs after the step's context is gone.
    (save as tf.GradSaveFunc)([cos, sin]);
    return {
      value: rotate(xi as tf.Tensor, cos, sin, false),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => rotate(dy, saved[0], saved[1], true),
    };
  });
  return f(x);
}
