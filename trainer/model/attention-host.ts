/**
 * Grouped-query causal attention as one op on the host (the CPU backends, where the native addon
 * is built): per sequence and KV group, scores = Q·Kᵀ, p = causal softmax, out = p·V, and the
 * backward by hand, all through the addon's products and softmax. block.ts's tfjs composition
 * ran ~22 ops forward and ~45 backward a block for the same products (transposes into head-major
 * order, unstack, stack, reshapes), each op ~50-100 µs of JavaScript on a 2-core machine while
 * the second core waited (issue 31's profile of a 1 × 128 step of the 0.5B shape). Here the head
 * gathers are the addon's copies (in JavaScript they cost as much as the products) and the
 * products the same calls. Measured at that shape, one block's attention forward and backward:
 * 6.2-6.4 ms against 9.1 for the composition; in the step 1.03x (trainer-profile --ab attention-host).
 */
import * as tf from "@tensorflow/tfjs-core";
import { nativeAttentionOf, nativeGemm, nativeProductsFor, type NativeAttention } from "../native/gemm.js";
import { readF32, writeF32s } from "../wasm/heap.js";

let hostOn = true;
/** The host op (default, where built) or block.ts's tfjs composition: for bench/trainer-profile.ts --ab and the tests. */
export function setHostAttention(on: boolean): void {
  hostOn = on;
}

function kernelsFor(backend: string): NativeAttention | null {
  return hostOn && nativeProductsFor(backend) ? nativeAttentionOf(nativeGemm()) : null;
}

/** Whether this backend runs attention as the host op (the memory plan counts it; block.ts's grid path aside). */
export function hostAttentionFor(backend: string): boolean {
  return kernelsFor(backend) !== null;
}

/** Where sequence rows lie in the batch's matrix (block.ts SeqContext). */
export interface SeqRows {
  offsets: readonly number[];
  lens: readonly number[];
}

/**
 * Scratch arrays, reused up to 1 M floats each (4 MiB: a 1 × 128 step's are 115 K): a step makes
 * ~100 calls. Larger ones (long sequences: [g·L, L] grows with L²) are the call's own and go with
 * it, so the process does not keep them outside the memory plan's count.
 */
const scratch = new Map<string, Float32Array>();
const SCRATCH_KEPT = 1 << 20;
function buf(name: string, n: number): Float32Array {
  if (n > SCRATCH_KEPT) return new Float32Array(n);
  let b = scratch.get(name);
  if (!b || b.length < n) scratch.set(name, (b = new Float32Array(n)));
  return b; // the products read their first m·k floats, and write m·n
}

/**
 * Group j's g heads (`perRow` heads a row, `d` floats each) of rows [o, o+L) of `matrix` into `block`
 * [g·L, d], head-major (row hh·L + t is head j·g + hh at position t), or back where `back`.
 */
function heads(
  kern: NativeAttention,
  matrix: Float32Array,
  block: Float32Array,
  o: number,
  L: number,
  perRow: number,
  d: number,
  j: number,
  g: number,
  back = false,
): void {
  kern.copyHeads(matrix, block, perRow * d, o, L, j * g * d, d, g, back);
}

type In = tf.Tensor | tf.GradSaveFunc;

/**
 * Attention of the batch's rows, each sequence causally over its own: q [1,rows,H,D], k
 * [1,rows,Hkv,D], v [1,rows,Hkv,Dv] → [rows, H·Dv], with `scale` on the scores; null where the
 * addon is not used (the caller composes tfjs's ops). Query head h reads KV head floor(h / (H/Hkv)).
 */
export function hostAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, seqs: SeqRows, scale: number): tf.Tensor2D | null {
  const kern = kernelsFor(tf.getBackend());
  if (!kern || q.dtype !== "float32" || k.dtype !== "float32" || v.dtype !== "float32") return null;
  const [, rows, H, D] = q.shape;
  const [Hkv, Dv] = [k.shape[2], v.shape[3]];
  const g = H / Hkv;
  const { offsets, lens } = seqs;
  // Every row is some sequence's (the output is written per sequence, never zeroed).
  if (lens.reduce((a, b) => a + b, 0) !== rows) throw new Error(`host attention: sequences of ${lens.join("+")} rows for a batch of ${rows}`);
  // Where each (sequence, group)'s probabilities [g·L, L] lie in the saved array.
  const pAt: number[] = [];
  let pLen = 0;
  for (const L of lens)
    for (let j = 0; j < Hkv; j++) {
      pAt.push(pLen);
      pLen += g * L * L;
    }
  const maxL = Math.max(0, ...lens);

  const f = tf.customGrad((qi: In, ki: In, vi: In, save: In) => {
    const [out, probs] = writeF32s([[rows, H * Dv], [Math.max(1, pLen)]], ([o, p]) => {
      const [qv, kv, vv] = [readF32(qi as tf.Tensor), readF32(ki as tf.Tensor), readF32(vi as tf.Tensor)];
      const [Q, K, V, S, O] = [buf("q", g * maxL * D), buf("k", maxL * D), buf("v", maxL * Dv), buf("s", g * maxL * maxL), buf("o", g * maxL * Dv)];
      lens.forEach((L, s) => {
        if (L === 0) return;
        for (let j = 0; j < Hkv; j++) {
          heads(kern, qv, Q, offsets[s], L, H, D, j, g);
          heads(kern, kv, K, offsets[s], L, Hkv, D, j, 1);
          heads(kern, vv, V, offsets[s], L, Hkv, Dv, j, 1);
          const P = p.subarray(pAt[s * Hkv + j], pAt[s * Hkv + j] + g * L * L);
          kern.nt(Q, K, S.subarray(0, g * L * L), g * L, L, D);
          kern.causalSoftmax(S.subarray(0, g * L * L), P, L, scale);
          kern.nn(P, V, O.subarray(0, g * L * Dv), g * L, Dv, L);
          heads(kern, o, O, offsets[s], L, H, Dv, j, g, true);
        }
      });
    });
    (save as tf.GradSaveFunc)([qi as tf.Tensor, ki as tf.Tensor, vi as tf.Tensor, probs]);
    return {
      value: out,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sq, sk, sv, sp] = saved;
        return writeF32s([q.shape, k.shape, v.shape], ([dq, dk, dv]) => {
          const [qv, kv, vv, pv, dyv] = [readF32(sq), readF32(sk), readF32(sv), readF32(sp), readF32(dy)];
          const n = g * maxL;
          const [Q, K, V, dO, dP, dS] = [buf("q", n * D), buf("k", maxL * D), buf("v", maxL * Dv), buf("o", n * Dv), buf("s", n * maxL), buf("ds", n * maxL)];
          const [dQ, dK, dV] = [buf("dq", n * D), buf("dk", maxL * D), buf("dv", maxL * Dv)];
          lens.forEach((L, s) => {
            if (L === 0) return;
            const o = offsets[s];
            for (let j = 0; j < Hkv; j++) {
              heads(kern, qv, Q, o, L, H, D, j, g);
              heads(kern, kv, K, o, L, Hkv, D, j, 1);
              heads(kern, vv, V, o, L, Hkv, Dv, j, 1);
              heads(kern, dyv, dO, o, L, H, Dv, j, g);
              const P = pv.subarray(pAt[s * Hkv + j], pAt[s * Hkv + j] + g * L * L);
              const [dPs, dSs] = [dP.subarray(0, g * L * L), dS.subarray(0, g * L * L)];
              kern.nt(dO, V, dPs, g * L, L, Dv); // dp = dO·Vᵀ
              kern.tn(P, dO, dV, L, Dv, g * L); // dV = pᵀ·dO
              kern.causalSoftmaxBackward(P, dPs, dSs, L, scale); // ds, the scale in it
              kern.nn(dSs, K, dQ, g * L, D, L); // dQ = ds·K
              kern.tn(dSs, Q, dK, L, D, g * L); // dK = dsᵀ·Q
              heads(kern, dq, dQ, o, L, H, D, j, g, true);
              heads(kern, dk, dK, o, L, Hkv, D, j, 1, true);
              heads(kern, dv, dV, o, L, Hkv, Dv, j, 1, true);
            }
          });
        });
      },
    };
  });
  return f(q, k, v) as tf.Tensor2D;
}
