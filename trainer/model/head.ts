/**
 * The output head over a large vocabulary, one slice of the vocabulary at a time: the logits
 * of a whole batch over 152k tokens are never held at once (the base hands out slices of the
 * output projection, resident or streamed from the host).
 *
 * Per slice c and row i it keeps only the slice's log-sum-exp lse_c, and combines them at the
 * end: lse = logsumexp_c(lse_c). What a caller can ask for, besides lse:
 * - log p of given ids per row (targets, or k candidates): z_id − lse with z_id = h·W[id]
 *   from the id's own row of W (gathered, so no slice needs to be searched);
 * - the top-k of each row's distribution (per-slice top-k, merged);
 * - KL(p_h ‖ p_other) per row against a second set of hidden rows (the publish gate);
 * - E_p[W] = Σ_v p(v)·W[v], the expected output row, from which the gradient of any log-prob
 *   follows without a second pass: ∂ log p(id)/∂h = W[id] − E_p[W] (see headGradient).
 * Nothing here is differentiated by tfjs; every tensor returned belongs to the caller.
 */
import * as tf from "@tensorflow/tfjs-core";
import { nativeGemm, nativeProductsFor, nativeSoftmaxRowsOf, type NativeSoftmaxRows } from "../native/gemm.js";
import { readF32, writeF32s } from "../wasm/heap.js";
import { frozenProduct, linearNoGrad } from "./fast-matmul.js";
import type { FrozenBase } from "./weights.js";

export interface HeadRequest {
  /** Hidden rows after the final norm, [N, nEmbd]. */
  h: tf.Tensor2D;
  /** ids per row whose log-probs are wanted: [N, k] row-major (k = ids.length / N). */
  ids?: Int32Array;
  /** Also the top-k ids and log-probs of each row's distribution. */
  topK?: number;
  /** Hidden rows of another policy at the same positions: per-row KL(p_h ‖ p_other). */
  klAgainst?: tf.Tensor2D;
  /** Also E_p[W] per row, for headGradient. */
  expectation?: boolean;
}

export interface HeadResult {
  /** [N]: log Σ_v exp(z_v). */
  lse: tf.Tensor1D;
  /** [N, k]: log p of request.ids. */
  logprobs?: tf.Tensor2D;
  /** [N, topK]: ids (int32) and log-probs, sorted by probability. */
  top?: { ids: tf.Tensor2D; logprobs: tf.Tensor2D };
  /** [N]: KL(p_h ‖ p_other). */
  kl?: tf.Tensor1D;
  /** [N, nEmbd]: Σ_v p(v)·W[v]. */
  expectation?: tf.Tensor2D;
}

/** Logits held at once (rows × slice), in floats: 8M floats = 32 MB per buffer. */
const LOGIT_BUDGET = 8 * 1024 * 1024;

/**
 * Each slice's softmax as one fused kernel (default), or as before issue 31's profile: its
 * log-sum-exp, then exp(z − lse_c) again for the expectation and the KL. Same results to float
 * rounding; the switch is for bench/trainer-profile.ts's alternating comparison and the tests.
 */
let fusedSlices = true;
export function setFusedHeadSlices(on: boolean): void {
  fusedSlices = on;
}

let nativeSlices = true;
/** The native addon's slice softmax (default, where built) or tfjs's fused kernels: for bench/trainer-profile.ts --ab and the tests. */
export function setNativeHeadSlices(on: boolean): void {
  nativeSlices = on;
}

/** The addon's row softmax where this backend uses the native products and both switches are on, else null. */
function nativeSoftmaxRows(): NativeSoftmaxRows | null {
  return nativeSlices && fusedSlices && nativeProductsFor(tf.getBackend()) ? nativeSoftmaxRowsOf(nativeGemm()) : null;
}

/**
 * A slice's softmax p and log-sum-exp lse_c [n] of logits z [n, slice]. Native: one pass over z
 * (issue 31: tfjs's softmax, two max reductions, a log and a subtraction were ~2.5% of a 1 × 128
 * step of the 0.5B shape). tfjs: its fused softmax (XNNPACK's, threaded, on wasm), and lse_c from
 * it: p_max = exp(z_max − lse_c), so lse_c = z_max − log p_max (p_max ≥ 1/slice, so its log is
 * exact to float rounding). Either way no exp(z − lse_c) is recomputed for the expectation or the KL.
 */
function sliceSoftmax(z: tf.Tensor2D): { p: tf.Tensor2D; lse: tf.Tensor1D } {
  const native = z.dtype === "float32" ? nativeSoftmaxRows() : null;
  if (native) {
    const [rows, cols] = z.shape;
    const [p, lse] = writeF32s([[rows, cols], [rows]], ([pv, lv]) => native.softmaxRows(readF32(z), pv, lv, cols));
    return { p: p as tf.Tensor2D, lse: lse as tf.Tensor1D };
  }
  const p = tf.softmax<tf.Tensor2D>(z);
  return { p, lse: tf.sub<tf.Tensor1D>(tf.max(z, 1), tf.log(tf.max(p, 1))) };
}

/** Row-wise dot products of h [N, D] with the output rows of ids [N, k] → [N, k]. */
function idLogits(base: FrozenBase, h: tf.Tensor2D, ids: Int32Array): tf.Tensor2D {
  const [N, D] = h.shape;
  const k = ids.length / N;
  return tf.tidy(() => {
    const rows = tf.reshape(base.outputRows(ids), [N, k, D]);
    return tf.sum<tf.Tensor2D>(tf.mul(rows, tf.expandDims(h, 1)), 2);
  });
}

export function headForward(base: FrozenBase, req: HeadRequest): HeadResult {
  const [N, D] = req.h.shape;
  if (req.ids && req.ids.length % N !== 0) throw new Error(`headForward: ${req.ids.length} ids for ${N} rows`);
  const k = req.topK ?? 0;
  const rowsPerBlock = Math.max(1, Math.floor(LOGIT_BUDGET / base.headChunkRows));
  const blocks: Array<{ r0: number; n: number }> = [];
  for (let r0 = 0; r0 < N; r0 += rowsPerBlock) blocks.push({ r0, n: Math.min(rowsPerBlock, N - r0) });
  // Per block, per slice: lse_c [n], and (as asked) top-k, KL parts, expectation parts.
  const parts = blocks.map(() => ({
    lse: [] as tf.Tensor1D[],
    lseO: [] as tf.Tensor1D[],
    klA: [] as tf.Tensor1D[],
    topV: [] as tf.Tensor2D[],
    topI: [] as tf.Tensor2D[],
    exp: [] as tf.Tensor2D[],
  }));
  const hb = blocks.map((b) => (blocks.length === 1 ? req.h : tf.slice(req.h, [b.r0, 0], [b.n, D])));
  const ob = req.klAgainst ? blocks.map((b) => (blocks.length === 1 ? req.klAgainst! : tf.slice(req.klAgainst!, [b.r0, 0], [b.n, D]))) : null;
  try {
    for (let c = 0; c < base.numHeadChunks; c++) {
      const { start, w } = base.headChunk(c);
      try {
        blocks.forEach((_, bi) => {
          const p = parts[bi];
          tf.tidy(() => {
            const z = linearNoGrad(hb[bi], w);
            // The slice's softmax in one pass and its log-sum-exp (sliceSoftmax), or as before
            // issue 31's profile: the log-sum-exp, then exp(z − lse_c) where asked.
            const fused = fusedSlices ? sliceSoftmax(z) : null;
            const pc = fused?.p ?? null;
            const lseC = fused?.lse ?? tf.logSumExp<tf.Tensor1D>(z, 1);
            p.lse.push(tf.keep(lseC));
            const probs = (): tf.Tensor2D => pc ?? (tf.exp(tf.sub(z, tf.expandDims(lseC, 1))) as tf.Tensor2D);
            if (ob) {
              const zo = linearNoGrad(ob[bi], w);
              p.lseO.push(tf.keep(fusedSlices ? sliceSoftmax(zo).lse : tf.logSumExp<tf.Tensor1D>(zo, 1)));
              // Σ_v softmax_c(z)_v·(z_v − zo_v): the slice's part of E_p[z − zo].
              p.klA.push(tf.keep(tf.sum<tf.Tensor1D>(tf.mul(probs(), tf.sub(z, zo)), 1)));
            }
            if (k > 0) {
              const kk = Math.min(k, z.shape[1]);
              const t = tf.topk(z, kk);
              p.topV.push(tf.keep(t.values));
              p.topI.push(tf.keep(tf.add<tf.Tensor2D>(t.indices, tf.scalar(start, "int32"))));
            }
            if (req.expectation) p.exp.push(tf.keep(frozenProduct(probs(), w)));
          });
        });
      } finally {
        base.releaseHeadChunk(w);
      }
    }
    return tf.tidy(() => {
      const lseBlocks: tf.Tensor1D[] = [];
      const out: { lse?: tf.Tensor1D; kl: tf.Tensor1D[]; topV: tf.Tensor2D[]; topI: tf.Tensor2D[]; exp: tf.Tensor2D[] } = {
        kl: [],
        topV: [],
        topI: [],
        exp: [],
      };
      parts.forEach((p) => {
        const lseStack = tf.stack(p.lse); // [C, n]
        const lse = tf.logSumExp<tf.Tensor1D>(lseStack, 0);
        lseBlocks.push(lse);
        // Weight of each slice in the whole distribution: exp(lse_c − lse), [C, n].
        const sliceW = tf.exp(tf.sub(lseStack, tf.expandDims(lse, 0)));
        if (ob) {
          const lseO = tf.logSumExp(tf.stack(p.lseO), 0);
          const a = tf.sum(tf.mul(sliceW, tf.stack(p.klA)), 0);
          out.kl.push(tf.add<tf.Tensor1D>(tf.sub(a, lse), lseO));
        }
        if (k > 0) {
          const v = tf.concat(p.topV, 1);
          const i = tf.concat(p.topI, 1);
          const kk = Math.min(k, v.shape[1]);
          const t = tf.topk(v, kk);
          out.topV.push(tf.sub<tf.Tensor2D>(t.values, tf.expandDims(lse, 1)));
          // Pick each row's merged ids by flat index (gather with batchDims is broken on wasm).
          const [rows, width] = i.shape;
          const rowBase = tf.mul(tf.range(0, rows, 1, "int32"), tf.scalar(width, "int32"));
          const flat = tf.add(t.indices, tf.expandDims(rowBase, 1));
          out.topI.push(tf.reshape<tf.Rank.R2>(tf.gather(tf.reshape(i, [-1]), tf.reshape(flat, [-1])), [rows, kk]));
        }
        if (req.expectation) {
          // Σ_c exp(lse_c − lse)·E_c, with E_c = Σ_{v∈c} softmax_c(z)_v·W[v]: [n, D].
          const e = tf.stack(p.exp); // [C, n, D]
          out.exp.push(tf.sum<tf.Tensor2D>(tf.mul(e, tf.expandDims(sliceW, 2)), 0));
        }
      });
      const cat = <T extends tf.Tensor>(xs: T[]): T => (xs.length === 1 ? xs[0] : tf.concat<T>(xs, 0));
      const lse = cat(lseBlocks);
      const res: HeadResult = { lse };
      if (req.ids) res.logprobs = tf.sub<tf.Tensor2D>(idLogits(base, req.h, req.ids), tf.expandDims(lse, 1));
      if (k > 0) res.top = { ids: cat(out.topI), logprobs: cat(out.topV) };
      if (ob) res.kl = tf.relu<tf.Tensor1D>(cat(out.kl)); // KL ≥ 0; tiny negatives are rounding
      if (req.expectation) res.expectation = cat(out.exp);
      return res as unknown as tf.TensorContainer;
    }) as unknown as HeadResult;
  } finally {
    for (const p of parts) tf.dispose([...p.lse, ...p.lseO, ...p.klA, ...p.topV, ...p.topI, ...p.exp]);
    if (blocks.length > 1) tf.dispose(hb);
    if (ob && blocks.length > 1) tf.dispose(ob);
  }
}

/**
 * ∂L/∂h for a loss L that depends on log-probs of given ids: with g [N, k] = ∂L/∂ log p(ids),
 * ∂L/∂h = Σ_j g_j·(W[id_j] − E_p[W]) (E_p[W] from headForward's `expectation`).
 */
export function headGradient(base: FrozenBase, ids: Int32Array, g: tf.Tensor2D, expectation: tf.Tensor2D): tf.Tensor2D {
  const [N, k] = g.shape;
  const D = expectation.shape[1];
  if (ids.length !== N * k) throw new Error(`headGradient: ${ids.length} ids for a [${N}, ${k}] gradient`);
  return tf.tidy(() => {
    const rows = tf.reshape(base.outputRows(ids), [N, k, D]);
    const direct = tf.sum(tf.mul(rows, tf.expandDims(g, 2)), 1);
    return tf.sub<tf.Tensor2D>(direct, tf.mul(expectation, tf.sum(g, 1, true)));
  });
}
