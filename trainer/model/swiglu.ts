/**
 * The FFN's gate: SwiGLU, silu(gate)·up, silu(x) = x·σ(x).
 *
 * On the CPU backends where the native addon is built (trainer/native/gemm.ts), one pass forward
 * and one backward over [rows, nFf] where tfjs runs sigmoid and two multiplies forward and eight
 * kernels backward (issue 31: 4% of a 1 × 128 step of the 0.5B shape, bench/trainer-profile.ts),
 * and the tape keeps only gate and up, not σ(gate) and silu(gate) (two [rows, nFf] tensors less
 * a kept block: models/plan/memoryPlan.ts counts them). Elsewhere tfjs's kernels, as before.
 */
import * as tf from "@tensorflow/tfjs-core";
import { nativeGemm, nativeProductsFor, nativeSwigluOf, type NativeSwiglu } from "../native/gemm.js";
import { readF32, writeF32, writeF32s } from "../wasm/heap.js";

let nativeOn = true;
/** The native pass (default, where built) or tfjs's kernels: for bench/trainer-profile.ts --ab and the tests. */
export function setNativeSwiglu(on: boolean): void {
  nativeOn = on;
}

/** The addon's SwiGLU where this backend uses the native products and the switch is on, else null. */
export function nativeSwigluFor(backend: string): NativeSwiglu | null {
  return nativeOn && nativeProductsFor(backend) ? nativeSwigluOf(nativeGemm()) : null;
}

type In = tf.Tensor | tf.GradSaveFunc;

/** silu(gate)·up for gate and up of one shape. */
export function swiglu<T extends tf.Tensor>(gate: T, up: T): T {
  const native = gate.dtype === "float32" && up.dtype === "float32" ? nativeSwigluFor(tf.getBackend()) : null;
  if (!native) return tf.mul<T>(tf.mul(gate, tf.sigmoid(gate)), up);
  if (gate.size !== up.size) throw new Error(`swiglu: gate ${JSON.stringify(gate.shape)} and up ${JSON.stringify(up.shape)} differ`);
  const f = tf.customGrad((g: In, u: In, save: In) => {
    const [gt, ut] = [g as tf.Tensor, u as tf.Tensor];
    (save as tf.GradSaveFunc)([gt, ut]);
    return {
      value: writeF32(gt.shape, (out) => native.swiglu(readF32(gt), readF32(ut), out)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sg, su] = saved;
        return writeF32s([sg.shape, su.shape], ([dg, du]) => native.swigluBackward(readF32(sg), readF32(su), readF32(dy), dg, du));
      },
    };
  });
  return f(gate, up) as T;
}
