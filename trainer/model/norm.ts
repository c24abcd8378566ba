/**
 * RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · w, with w frozen (the norms' weights are
 * never trained; LoRA adapts the linear layers).
 *
 * On the CPU backends where the native addon is built (trainer/native/gemm.ts), one pass forward
 * and one backward per norm, where tfjs runs six kernels forward and about twice as many backward
 * (issue 31: two norms a block, four with Qwen3's query and key norms), and the tape keeps x
 * and w, not x², the mean, its rsqrt and x·rsqrt (models/plan/memoryPlan.ts counts that:
 * `hostNorm`). Elsewhere tfjs's kernels, as before.
 */
import * as tf from "@tensorflow/tfjs-core";
import { nativeGemm, nativeProductsFor, nativeRmsNormOf, type NativeRmsNorm } from "../native/gemm.js";
import { readF32, writeF32 } from "../wasm/heap.js";

let nativeOn = true;
/** The native pass (default, where built) or tfjs's kernels: for bench/trainer-profile.ts --ab and the tests. */
export function setNativeRmsNorm(on: boolean): void {
  nativeOn = on;
}

/** The addon's RMSNorm where this backend uses the native products and the switch is on, else null. */
export function nativeRmsNormFor(backend: string): NativeRmsNorm | null {
  return nativeOn && nativeProductsFor(backend) ? nativeRmsNormOf(nativeGemm()) : null;
}

type In = tf.Tensor | tf.GradSaveFunc;

/** RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · w. */
export function rmsNorm<T extends tf.Tensor>(x: T, w: tf.Tensor1D, eps: number): T {
  const native = x.dtype === "float32" && w.dtype === "float32" ? nativeRmsNormFor(tf.getBackend()) : null;
  if (!native) {
    const ms = tf.mean(tf.square(x), -1, true);
    return tf.mul<T>(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), w);
  }
  const cols = x.shape[x.rank - 1];
  if (w.size !== cols) throw new Error(`rmsNorm: weight of ${w.size} for rows of ${cols}`);
  const f = tf.customGrad((xi: In, save: In) => {
    const xt = xi as tf.Tensor;
    // w too: a streamed block's weights are freed after its forward (a kept block's tape must
    // hold what its gradient reads; tape.ts), and the saved copy shares w's data.
    (save as tf.GradSaveFunc)([xt, w]);
    return {
      value: writeF32(xt.shape, (y) => native.rmsNorm(readF32(xt), readF32(w), y, cols, eps)),
      gradFunc: (dy: tf.Tensor, [sx, sw]: tf.Tensor[]) =>
        writeF32(sx.shape, (dx) => native.rmsNormBackward(readF32(sx), readF32(sw), readF32(dy), dx, cols, eps)),
    };
  });
  return f(x) as T;
}
