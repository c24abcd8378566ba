/**
 * A LoRA-adapted frozen linear layer, y = x·Wᵀ + scale·(x·A)·B, as native products that add
 * into their output (trainer/native/gemm.ts `accumulates`). Where W is a host weight the LoRA
 * branch is added into the frozen product's output, and in the backward (scale·dy·Bᵀ)·Aᵀ into
 * dy·W: tfjs ran an Add of [rows, out] forward and of [rows, in] backward, and a scale multiply
 * each way, for every adapted layer (issue 31: Add was the largest wasm kernel left in a 1 × 128
 * step of the 0.5B shape). Gradients for x, A and B; the same values as block.ts's composition of
 * frozenLinear and mm, up to float rounding.
 */
import * as tf from "@tensorflow/tfjs-core";
import { nativeGemm, nativeProductsFor, type HostMatrix, type NativeGemm } from "../native/gemm.js";
import { readF32, writeF32s } from "../wasm/heap.js";
import { isHostMatrix, type FrozenMatrix } from "./fast-matmul.js";

let fusedOn = true;
/** The fused layer (default, where the addon adds into products) or tfjs's composition: for bench/trainer-profile.ts --ab and the tests. */
export function setFusedLora(on: boolean): void {
  fusedOn = on;
}

/** Whether this backend runs LoRA-adapted layers on host weights as one op (the memory plan counts it). */
export function fusedLoraFor(backend: string): boolean {
  return nativeProductsFor(backend) !== null && accumulatingGemm() !== null;
}

/** The addon where its products add into their output and the switch is on, else null. */
function accumulatingGemm(): NativeGemm | null {
  const g = fusedOn ? nativeGemm() : null;
  return g?.accumulates === true ? g : null;
}

type In = tf.Tensor | tf.GradSaveFunc;

/**
 * x [M,K]·Wᵀ + scale·(x·A)·B for a host weight W [N,K], A [K,r], B [r,N]; null where the addon
 * cannot add into a product (the caller composes the layer from tfjs ops). The gradient reads W
 * from `gradWeight` (a kept block's holder is re-bound for its backward: forward.ts).
 */
export function hostLoraLinear(
  x: tf.Tensor2D,
  w: HostMatrix,
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  scale: number,
  gradWeight: () => FrozenMatrix,
): tf.Tensor2D | null {
  const g = accumulatingGemm();
  if (!g || x.dtype !== "float32" || a.dtype !== "float32" || b.dtype !== "float32") return null;
  const [M, K] = x.shape;
  const [N, r] = [w.rows, a.shape[1]];
  if (w.cols !== K || a.shape[0] !== K || b.shape[0] !== r || b.shape[1] !== N) {
    const dims = (t: tf.Tensor) => t.shape.join(", ");
    throw new Error(`LoRA linear: x [${dims(x)}], W [${N}, ${w.cols}], A [${dims(a)}], B [${dims(b)}] do not chain`);
  }
  const f = tf.customGrad((xi: In, ai: In, bi: In, save: In) => {
    const [xt, at, bt] = [xi, ai, bi] as tf.Tensor2D[];
    // u = scale·(x·A), kept for B's gradient.
    const [y, u] = writeF32s(
      [
        [M, N],
        [M, r],
      ],
      ([out, uv]) => {
        const xv = readF32(xt);
        g.nn(xv, readF32(at), uv, M, r, K);
        for (let i = 0; i < uv.length; i++) uv[i] *= scale;
        g.nt(xv, w.data, out, M, N, K);
        g.nn(uv, readF32(bt), out, M, N, r, true);
      },
    );
    (save as tf.GradSaveFunc)([xt, at, bt, u]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sx, sa, sb, su] = saved;
        const wg = gradWeight();
        if (!isHostMatrix(wg)) throw new Error("LoRA linear: the backward's weight is not on the host");
        return writeF32s(
          [
            [M, K],
            [K, r],
            [r, N],
          ],
          ([dx, da, db]) => {
            const d = readF32(dy);
            // t = scale·(dy·Bᵀ): the gradient at x·A.
            const t = new Float32Array(M * r);
            g.nt(d, readF32(sb), t, M, r, N);
            for (let i = 0; i < t.length; i++) t[i] *= scale;
            g.nn(d, wg.data, dx, M, K, N);
            g.nt(t, readF32(sa), dx, M, K, r, true);
            g.tn(readF32(sx), t, da, K, r, M);
            g.tn(readF32(su), d, db, r, N, M);
          },
        );
      },
    };
  });
  return f(x, a, b) as tf.Tensor2D;
}
