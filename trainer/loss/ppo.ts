import * as tf from "@tensorflow/tfjs-core";
import "./gradients.js";

/** PPO-clip hyper-parameters (method.md defaults). */
export interface PpoOptions {
  /** Lower clip: ρ is clipped at 1 − epsLow. Default 0.2. */
  epsLow?: number;
  /** Upper clip: ρ is clipped at 1 + epsHigh. Default 0.28 (asymmetric, as the reference). */
  epsHigh?: number;
  /** Weight of the k3 KL to the frozen base. Default 0 (the reference's default). */
  klBeta?: number;
  /** |lp − lp_old| is clamped to this before exp, so a stale lp_old cannot overflow. Default 20. */
  logRatioClamp?: number;
}

export const PPO_DEFAULTS: Required<PpoOptions> = { epsLow: 0.2, epsHigh: 0.28, klBeta: 0, logRatioClamp: 20 };

export interface PpoInputs {
  /** log π_θ(a_t|s) of the policy being trained, [B, T] (differentiable). */
  logprobs: tf.Tensor2D;
  /** log π_old(a_t|s): the policy that produced the sample, [B, T] (treated as constant). */
  oldLogprobs: tf.Tensor2D;
  /** A_t per token, [B, T] (treated as constant). */
  advantages: tf.Tensor2D;
  /** 1 on trained tokens, 0 elsewhere (prompt, padding, masked-out samples), [B, T]. */
  mask: tf.Tensor2D;
  /** log π_base(a_t|s) of the frozen base, [B, T]; needed only when klBeta > 0. */
  refLogprobs?: tf.Tensor2D;
}

export interface PpoResult {
  /** Scalar loss to minimise: −mean_t min(ρA, clip(ρ)A) + β·mean_t k3. */
  loss: tf.Scalar;
  /** Fraction of trained tokens where the clipped branch was the minimum (gradient zero). */
  clipFraction: tf.Scalar;
  /** mean_t k3 KL to the base (0 when no refLogprobs). */
  kl: tf.Scalar;
}

/**
 * Masked mean over every trained token of the batch (token-level mean, so a long response
 * weighs by its length, as the reference's per-token loss does). 0 when nothing is trained.
 */
export function maskedMean(x: tf.Tensor, mask: tf.Tensor): tf.Scalar {
  return tf.tidy(() => {
    const n = tf.maximum(tf.sum(mask), tf.scalar(1));
    return tf.div<tf.Scalar>(tf.sum(tf.mul(x, mask)), n);
  });
}

/**
 * k3 (low-variance, always ≥ 0) estimator of KL(π_θ ‖ π_base) per token:
 * with d = lp_base − lp_θ, k3 = exp(d) − d − 1.
 */
export function k3Kl(logprobs: tf.Tensor, refLogprobs: tf.Tensor, clamp = PPO_DEFAULTS.logRatioClamp): tf.Tensor {
  return tf.tidy(() => {
    const d = tf.clipByValue(tf.sub(refLogprobs, logprobs), -clamp, clamp);
    return tf.sub(tf.sub(tf.exp(d), d), tf.scalar(1));
  });
}

/**
 * PPO-clip surrogate (method.md "Losses"): ρ_t = exp(clamp(lp − lp_old, ±20)),
 * L = −mean_t min(ρ_t A_t, clip(ρ_t, 1−ε, 1+ε_high) A_t) [+ β·mean_t k3].
 * Gradients flow only through `logprobs`; the other inputs must be computed outside the tape.
 */
export function ppoClipLoss(inp: PpoInputs, opts: PpoOptions = {}): PpoResult {
  const o = { ...PPO_DEFAULTS, ...opts };
  return tf.tidy(() => {
    // tfjs has no stopGradient: these inputs are constants because the caller computes them
    // outside the function given to tf.variableGrads (only `logprobs` is taped).
    const old = inp.oldLogprobs;
    const adv = inp.advantages;
    const mask = inp.mask;
    const logRatio = tf.clipByValue(tf.sub(inp.logprobs, old), -o.logRatioClamp, o.logRatioClamp);
    const ratio = tf.exp(logRatio);
    const unclipped = tf.mul(ratio, adv);
    const clipped = tf.mul(tf.clipByValue(ratio, 1 - o.epsLow, 1 + o.epsHigh), adv);
    const surrogate = tf.minimum(unclipped, clipped);
    let loss = tf.neg(maskedMean(surrogate, mask));
    let kl: tf.Scalar = tf.scalar(0);
    if (inp.refLogprobs) {
      kl = maskedMean(k3Kl(inp.logprobs, inp.refLogprobs, o.logRatioClamp), mask);
      if (o.klBeta !== 0) loss = tf.add(loss, tf.mul(tf.scalar(o.klBeta), kl));
    } else if (o.klBeta !== 0) {
      throw new Error("ppoClipLoss: klBeta > 0 needs refLogprobs (the frozen base's log-probs)");
    }
    // Clipped branch strictly smaller ⇒ that token contributes no gradient.
    const isClipped = tf.cast(tf.less(clipped, unclipped), "float32");
    const clipFraction = maskedMean(isClipped, mask);
    return { loss: loss, clipFraction, kl };
  });
}
