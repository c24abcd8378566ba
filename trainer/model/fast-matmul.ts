/**
 * Matrix products with hand-written gradients, in the form each backend runs fastest.
 * On wasm, tf.matMul with transposeA/transposeB runs 10–25x slower than without (no XNNPACK
 * path), tfjs's own MatMul gradient uses exactly those flags, and rank-3 batched products are
 * ~8x slower than a loop of 2-D ones (bench/trainer-matmul.ts). GPU backends take the flags
 * natively, so there the transposes are left to the kernel.
 */
import * as tf from "@tensorflow/tfjs-core";
import { nativeGemm, nativeProductsFor, type HostMatrix, type NativeGemm } from "../native/gemm.js";
import { readF32, writeF32 } from "../wasm/heap.js";

type In = tf.Tensor | tf.GradSaveFunc;

/** Whether transposed operands should be written as explicit transposes (wasm, cpu). */
function explicitTranspose(): boolean {
  const b = tf.getBackend();
  return b === "wasm" || b === "cpu";
}

/** Whether rank-3 batched products beat a loop of 2-D ones (GPU backends; not wasm, ~8x slower there). */
export function batchedProducts(): boolean {
  return !explicitTranspose();
}

let sizedTranspose = true;
/**
 * matMulBT picks which operand to transpose by size (default), or always transposes the
 * activation as before issue 31's profile: for bench/trainer-profile.ts's alternating comparison.
 */
export function setSizedTranspose(on: boolean): void {
  sizedTranspose = on;
}

let nativeAll = true;
/**
 * Every float32 product of two tensors natively where the frozen weights' are (default: the
 * LoRA factors' and attention's too), or only the large LoRA gradients as before: for
 * bench/trainer-profile.ts's alternating comparison (--ab native-all) and the tests.
 */
export function setNativeAllProducts(on: boolean): void {
  nativeAll = on;
}

type Form = "nn" | "nt" | "tn";

/**
 * a·b ("nn", b [K,N]), a·bᵀ ("nt", b [N,K]) or aᵀ·b ("tn", a [K,M]) natively on the CPU
 * backends, or null where they are not used. Since the heap is read and written in place
 * (wasm/heap.ts) a native call costs no copy, and the addon needs neither XNNPACK's packing of a
 * fresh right operand on every call nor an explicit transpose: at 16 × 81 on the 0.5B shape
 * attention's products ran at 9 GFLOP/s and the LoRA factors' at 22 on wasm.
 */
function nativeProduct(form: Form, a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D | null {
  if (!nativeAll || a.dtype !== "float32" || b.dtype !== "float32") return null;
  const g = nativeProductsFor(tf.getBackend());
  if (!g) return null;
  const [M, K] = form === "tn" ? [a.shape[1], a.shape[0]] : a.shape;
  const N = form === "nt" ? b.shape[0] : b.shape[1];
  return writeF32<tf.Rank.R2>([M, N], (out) => g[form](readF32(a), readF32(b), out, M, N, K));
}

/** a·bᵀ for a [M,K], b [N,K]. */
function matMulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const native = nativeProduct("nt", a, b);
  if (native) return native;
  if (!explicitTranspose()) return tf.matMul(a, b, false, true);
  // On wasm (b·aᵀ)ᵀ beats a·bᵀ through an explicit transpose of a large b: measured 39 vs 56 ms
  // for [128,896]·[896,4864] (the small activation is transposed twice instead). For a small b
  // (a LoRA factor in the backward: dy·Bᵀ, dU·Aᵀ) the other way round moves less: b·aᵀ
  // transposes a, packs aᵀ as XNNPACK's right operand and transposes the [N, M] product (4MK +
  // 2MN floats moved), a·(bᵀ) transposes and packs b (4NK).
  const [M, K] = a.shape;
  const N = b.shape[0];
  if (sizedTranspose && 2 * N * K <= 2 * M * K + M * N) return tf.matMul(a, tf.transpose(b));
  return tf.transpose(tf.matMul(b, tf.transpose(a))) as tf.Tensor2D;
}

/** With setNativeAllProducts(false), products below this many multiply-adds stay on the backend, as before. */
const NATIVE_MIN_MACS = 1 << 22;

/** aᵀ·b for a [K,M], b [K,N]. */
function matMulAT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const native = nativeProduct("tn", a, b);
  if (native) return native;
  const [K, M] = a.shape;
  const N = b.shape[1];
  // A LoRA factor's gradient, (x·A)ᵀ·dy: on wasm XNNPACK packs dy, [rows, 4864] at the 0.5B
  // shape, as a fresh right operand every time (3.1 GFLOP/s measured in a 16 × 81 step).
  const g = nativeProductsFor(tf.getBackend());
  if (g && K * M * N >= NATIVE_MIN_MACS && a.dtype === "float32" && b.dtype === "float32") return hostTN(g, a, b);
  return explicitTranspose() ? tf.matMul(tf.transpose(a), b) : tf.matMul(a, b, true, false);
}

/** aᵀ·b natively as before setNativeAllProducts: a transposed on the host, b read in place (wasm/heap.ts). */
function hostTN(g: NativeGemm, a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const [K, M] = a.shape;
  const N = b.shape[1];
  const av = readF32(a);
  const at = new Float32Array(M * K);
  for (let k = 0; k < K; k++) for (let m = 0; m < M; m++) at[m * K + k] = av[k * M + m];
  return writeF32<tf.Rank.R2>([M, N], (out) => g.nn(at, readF32(b), out, M, N, K));
}

/** a [M,K] · b [K,N]; gradients for both: da = dy·bᵀ, db = aᵀ·dy. */
export function mm(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((x: In, y: In, save: In) => {
    const [xa, yb] = [x as tf.Tensor2D, y as tf.Tensor2D];
    (save as tf.GradSaveFunc)([xa, yb]);
    return {
      value: nativeProduct("nn", xa, yb) ?? tf.matMul(xa, yb),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sa, sb] = saved as tf.Tensor2D[];
        const d = dy as tf.Tensor2D;
        return [matMulBT(d, sb), matMulAT(sa, d)];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}

/** a [M,K] · b [N,K]ᵀ; gradients for both: da = dy·b, db = dyᵀ·a. */
export function mmT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((x: In, y: In, save: In) => {
    const [xa, yb] = [x as tf.Tensor2D, y as tf.Tensor2D];
    (save as tf.GradSaveFunc)([xa, yb]);
    return {
      value: nativeProduct("nt", xa, yb) ?? (explicitTranspose() ? tf.matMul(xa, tf.transpose(yb)) : tf.matMul(xa, yb, false, true)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sa, sb] = saved as tf.Tensor2D[];
        const d = dy as tf.Tensor2D;
        return [nativeProduct("nn", d, sb) ?? tf.matMul(d, sb), matMulAT(d, sa)];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}

/**
 * A frozen weight in GGUF layout [out, in]: a backend tensor, or f32 rows on the host that the
 * native products (trainer/native/gemm.ts) read in place.
 */
export type FrozenMatrix = tf.Tensor2D | HostMatrix;

export function isHostMatrix(w: FrozenMatrix): w is HostMatrix {
  return (w as HostMatrix).kind === "host";
}

/** x·wᵀ on the host: x read where the backend keeps it, the product written into a new tensor (wasm/heap.ts). */
function hostNT(x: tf.Tensor2D, w: HostMatrix): tf.Tensor2D {
  const [M, K] = x.shape;
  if (K !== w.cols) throw new Error(`x·wᵀ: x is [${M}, ${K}] but w [${w.rows}, ${w.cols}]`);
  const g = requireGemm();
  return writeF32<tf.Rank.R2>([M, w.rows], (out) => g.nt(readF32(x), w.data, out, M, w.rows, K));
}

/** p·w on the host (p [M, rows of w]). */
function hostNN(p: tf.Tensor2D, w: HostMatrix): tf.Tensor2D {
  const [M, N] = p.shape;
  if (N !== w.rows) throw new Error(`p·w: p is [${M}, ${N}] but w [${w.rows}, ${w.cols}]`);
  const g = requireGemm();
  return writeF32<tf.Rank.R2>([M, w.cols], (out) => g.nn(readF32(p), w.data, out, M, w.cols, N));
}

function requireGemm(): NativeGemm {
  const g = nativeGemm();
  // FrozenBase hands out host matrices only when the addon loaded (weights.ts).
  if (!g) throw new Error("a host weight reached a product without the native products loaded");
  return g;
}

/**
 * x [M,K] · w [N,K]ᵀ with w a frozen weight in GGUF layout [out, in] (every linear weight and
 * the vocabulary projection): only x gets a gradient, dx = dy·w (a plain product). The gradient
 * reads the weight from `gradWeight` when given (a kept block's streamed weight is released
 * after its forward and acquired again for its backward: forward.ts), else `w`. A host weight
 * runs both products natively. On wasm a tensor weight has XNNPACK pack w (dy·w's right
 * operand) again for every streamed weight; multiplying by a transposed copy on the left
 * instead (wᵀ made on the host at upload) was tried in issue 31 and lost: the host transposes
 * cost more than the packing (0.944x on 2 quiet cores).
 */
export function frozenLinear(x: tf.Tensor2D, w: FrozenMatrix, gradWeight?: () => FrozenMatrix): tf.Tensor2D {
  const f = tf.customGrad((xi: In) => ({
    value: linearNoGrad(xi as tf.Tensor2D, w),
    gradFunc: (dy: tf.Tensor) => frozenProduct(dy as tf.Tensor2D, gradWeight ? gradWeight() : w),
  }));
  return f(x) as tf.Tensor2D;
}

/** Plain (non-differentiated) x·wᵀ for w [N,K] in GGUF layout: the head's logits. */
export function linearNoGrad(x: tf.Tensor2D, w: FrozenMatrix): tf.Tensor2D {
  return isHostMatrix(w) ? hostNT(x, w) : matMulBT(x, w);
}

/** Plain p·w for w [N,K] in GGUF layout and p [M,N]: dx of a linear layer, the head's E_p[W]. */
export function frozenProduct(p: tf.Tensor2D, w: FrozenMatrix): tf.Tensor2D {
  return isHostMatrix(w) ? hostNN(p, w) : tf.matMul(p, w);
}

/** A frozen weight as a backend tensor (a host matrix is uploaded: tests and references). */
export function frozenTensor(w: FrozenMatrix): tf.Tensor2D {
  return isHostMatrix(w) ? tf.tensor2d(w.data, [w.rows, w.cols]) : w;
}
