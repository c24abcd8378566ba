import * as tf from "@tensorflow/tfjs-core";
import "./gradients.js";
import { maskedMean, PPO_DEFAULTS, type PpoOptions } from "./ppo.js";

/** Top-k select (method.md's advanced option), k = 4 by default. */
export const TOPK_DEFAULT_K = 4;

/**
 * Mean over positions of |student top-k ∩ teacher top-k| / k: how much the teacher (prompted
 * with one hint) agrees with the student about the plausible next tokens.
 */
export function topkOverlap(studentIds: readonly (readonly number[])[], teacherIds: readonly (readonly number[])[]): number {
  if (studentIds.length !== teacherIds.length) {
    throw new Error(`topkOverlap: ${studentIds.length} student positions, ${teacherIds.length} teacher positions`);
  }
  if (studentIds.length === 0) return 0;
  let total = 0;
  for (let t = 0; t < studentIds.length; t++) {
    const s = new Set(studentIds[t]);
    let shared = 0;
    for (const id of new Set(teacherIds[t])) if (s.has(id)) shared++;
    total += shared / Math.max(1, studentIds[t].length);
  }
  return total / studentIds.length;
}

/** Index of the candidate hint whose teacher top-k overlaps the student's most (first on ties). */
export function selectHint(studentIds: readonly (readonly number[])[], candidates: readonly (readonly (readonly number[])[])[]): number {
  if (candidates.length === 0) throw new Error("selectHint: no candidate hints");
  let best = 0;
  let bestScore = -1;
  candidates.forEach((c, i) => {
    const score = topkOverlap(studentIds, c);
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  });
  return best;
}

export interface TopkOpdInputs {
  /** log π_θ(v|s) at the student's top-k ids, [B, T, K] (differentiable). */
  logprobs: tf.Tensor3D;
  /** log π_old(v|s) at the same ids, [B, T, K]. */
  oldLogprobs: tf.Tensor3D;
  /** log π_teacher(v|s + hint) at the same ids, [B, T, K]. */
  teacherLogprobs: tf.Tensor3D;
  /** 1 on trained positions, [B, T]. */
  mask: tf.Tensor2D;
}

/**
 * The top-k OPD term: over the student's top-k tokens v at each position,
 * A_v = clip(lp_T(v) − lp_old(v), ±1), weighted by w_v = p_old(v) / Σ_{v'∈top-k} p_old(v')
 * (constant), inside the same PPO-clip surrogate: L = −mean_t Σ_v w_v·min(ρ_v A_v, clip(ρ_v) A_v).
 * Inputs other than `logprobs` must be computed outside the gradient tape.
 */
export function topkOpdLoss(inp: TopkOpdInputs, opts: PpoOptions = {}): tf.Scalar {
  const o = { ...PPO_DEFAULTS, ...opts };
  return tf.tidy(() => {
    const adv = tf.clipByValue(tf.sub(inp.teacherLogprobs, inp.oldLogprobs), -1, 1);
    const pOld = tf.exp(inp.oldLogprobs);
    const w = tf.div(pOld, tf.maximum(tf.sum(pOld, -1, true), tf.scalar(1e-30)));
    const ratio = tf.exp(tf.clipByValue(tf.sub(inp.logprobs, inp.oldLogprobs), -o.logRatioClamp, o.logRatioClamp));
    const surrogate = tf.minimum(tf.mul(ratio, adv), tf.mul(tf.clipByValue(ratio, 1 - o.epsLow, 1 + o.epsHigh), adv));
    const perPosition = tf.sum(tf.mul(w, surrogate), -1);
    return tf.neg<tf.Scalar>(maskedMean(perPosition, inp.mask));
  });
}
