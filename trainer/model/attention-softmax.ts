/**
 * Attention's probabilities from a group's raw scores q·kᵀ [g·T, T] (g query heads' [T, T]
 * blocks, row r at query position r mod T): softmax(scale·scores + causal mask) over each row.
 *
 * On the CPU backends where the native addon is built (trainer/native/gemm.ts), one pass each
 * way: the scale, the mask's add and the softmax forward (3 tfjs kernels, the add reading a
 * [T, T] mask), and their gradients (the softmax's 4 kernels, the scale's), for every KV group of
 * every block; columns past the diagonal are never exponentiated. Elsewhere (and on the GPU
 * backends' batched path, block.ts) tfjs's kernels, as before.
 */
import * as tf from "@tensorflow/tfjs-core";
import { nativeCausalSoftmaxOf, nativeGemm, nativeProductsFor, type NativeCausalSoftmax } from "../native/gemm.js";
import { readF32, writeF32 } from "../wasm/heap.js";

let nativeOn = true;
/** The native pass (default, where built) or tfjs's kernels: for bench/trainer-profile.ts --ab and the tests. */
export function setNativeCausalSoftmax(on: boolean): void {
  nativeOn = on;
}

/** The addon's causal softmax where this backend uses the native products and the switch is on, else null. */
export function nativeCausalSoftmaxFor(backend: string): NativeCausalSoftmax | null {
  return nativeOn && nativeProductsFor(backend) ? nativeCausalSoftmaxOf(nativeGemm()) : null;
}

type In = tf.Tensor | tf.GradSaveFunc;

/**
 * softmax(scale·scores + mask) of `scores` [g·T, T], with `mask` the additive causal mask [T, T]
 * (used by tfjs's path only: the native pass masks by position).
 */
export function causalSoftmax(scores: tf.Tensor2D, scale: number, mask: tf.Tensor2D): tf.Tensor2D {
  const T = scores.shape[1];
  const native = scores.dtype === "float32" ? nativeCausalSoftmaxFor(tf.getBackend()) : null;
  if (!native) {
    const rows = scores.shape[0];
    return tf.reshape(tf.softmax(tf.add(tf.reshape(tf.mul(scores, scale), [rows / T, T, T]), mask)), [rows, T]);
  }
  const f = tf.customGrad((s: In, save: In) => {
    const st = s as tf.Tensor2D;
    const p = writeF32<tf.Rank.R2>(st.shape, (out) => native.causalSoftmax(readF32(st), out, T, scale));
    (save as tf.GradSaveFunc)([p]);
    return {
      value: p,
      gradFunc: (dp: tf.Tensor, [sp]: tf.Tensor[]) => writeF32(sp.shape, (ds) => native.causalSoftmaxBackward(readF32(sp), readF32(dp), ds, T, scale)),
    };
  });
  return f(scores);
}
