/**
 * One transformer block of llama / qwen2 / qwen3 as llama.cpp computes it: RMSNorm → attention
 * (Q/K/V [+bias] [+per-head Q/K RMSNorm] → RoPE → grouped-query causal softmax attention →
 * output) residual, RMSNorm → SwiGLU MLP residual. LoRA adds scale·(x·A)·B to each adapted
 * linear layer. A pure function of its inputs, so the trainer can run it once without a tape
 * (forward) and again under tf.grads (backward, one block at a time).
 */
import * as tf from "@tensorflow/tfjs-core";
import type { ModelConfig } from "../../models/arch/config.js";
import { roundActivations } from "./activation-rounding.js";
import { batchedProducts, frozenLinear, mm, mmT } from "./fast-matmul.js";
import { applyRope } from "./rope.js";
import type { GgmlType } from "../../models/gguf/types.js";
import type { LayerWeights, LinearName } from "./weights.js";

/** The adapter of one block: A [in, rank] and B [rank, out] per adapted linear layer. */
export interface BlockLora {
  scale: number;
  pairs: Partial<Record<LinearName, { a: tf.Tensor2D; b: tf.Tensor2D }>>;
}

/** What every block of one batch shares. */
export interface SeqContext {
  config: ModelConfig;
  B: number;
  T: number;
  cos: tf.Tensor2D;
  sin: tf.Tensor2D;
  /** Additive causal mask [T, T]. */
  mask: tf.Tensor2D;
  /** Round activations as llama.cpp's CPU backend does for each weight type (parity tool). */
  rounding: Record<LinearName, GgmlType> | null;
  /**
   * Called after each block a pass runs, with the work done in token-blocks (B·T for a forward
   * block, 2·B·T for a backward one: recompute and gradient): the progress a long step reports.
   */
  tick?: (tokenBlocks: number) => void;
}

/** RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · w. */
export function rmsNorm<T extends tf.Tensor>(x: T, w: tf.Tensor1D, eps: number): T {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul<T>(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), w);
}

/** Additive causal mask [T, T]: 0 on and below the diagonal, a large negative above. */
export function causalMask(T: number): tf.Tensor2D {
  const m = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = -1e30;
  return tf.tensor2d(m, [T, T]);
}

function linear(x: tf.Tensor2D, w: LayerWeights, name: LinearName, lora: BlockLora | null, ctx: SeqContext): tf.Tensor2D {
  const xw = ctx.rounding ? roundActivations(x, ctx.rounding[name]) : x;
  // The gradient reads w.linear[name] when it runs: a kept block's holder is re-bound then (forward.ts).
  const y = frozenLinear(xw, w.linear[name], () => w.linear[name]);
  const pair = lora?.pairs[name];
  if (!pair || !lora) return y;
  return tf.add<tf.Tensor2D>(y, tf.mul(mm(mm(x, pair.a), pair.b), lora.scale));
}

/**
 * Grouped-query attention. q [B,T,H,D], k [B,T,Hkv,D], v [B,T,Hkv,Dv] → [B*T, H*Dv].
 * Query head h reads KV head floor(h / (H/Hkv)), as ggml's broadcast mul_mat does.
 */
function attention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, ctx: SeqContext): tf.Tensor2D {
  const [B, T, H, D] = q.shape;
  const Hkv = k.shape[2];
  const Dv = v.shape[3];
  const g = H / Hkv;
  // Query heads of one KV head are adjacent (h = kv·g + j), so [B, H, T, D] is already
  // [B, Hkv, g, T, D] in memory: B*Hkv groups of [g*T, D] by reshape alone. Rank ≤ 4
  // throughout (tfjs-webgpu generates invalid shaders for rank-5 transposes).
  const scale = 1 / Math.sqrt(ctx.config.headDim);
  const q3 = tf.reshape(tf.transpose(q, [0, 2, 1, 3]), [B * Hkv, g * T, D]);
  const k3 = tf.reshape(tf.transpose(k, [0, 2, 1, 3]), [B * Hkv, T, D]);
  const v3 = tf.reshape(tf.transpose(v, [0, 2, 1, 3]), [B * Hkv, T, Dv]);
  let out: tf.Tensor;
  if (!batchedProducts()) {
    // A loop of 2-D products: rank-3 batched matMul is ~8x slower on wasm.
    const [qg, kg, vg] = [tf.unstack(q3), tf.unstack(k3), tf.unstack(v3)];
    out = tf.stack(
      qg.map((qi, i) => {
        const scores = tf.reshape(tf.mul(mmT(qi as tf.Tensor2D, kg[i] as tf.Tensor2D), scale), [g, T, T]);
        const probs = tf.reshape<tf.Rank.R2>(tf.softmax(tf.add(scores, ctx.mask)), [g * T, T]);
        return mm(probs, vg[i] as tf.Tensor2D); // [g*T, Dv]
      }),
    );
  } else {
    // GPUs: one batched product per step of the attention, not 2·B·Hkv small dispatches.
    const scores = tf.reshape(tf.mul(tf.matMul(q3, k3, false, true), scale), [B * Hkv, g, T, T]);
    const probs = tf.reshape(tf.softmax(tf.add(scores, ctx.mask)), [B * Hkv, g * T, T]);
    out = tf.matMul(probs, v3);
  }
  // [B*Hkv, g*T, Dv] is [B, H, T, Dv] in memory.
  return tf.reshape(tf.transpose(tf.reshape(out, [B, H, T, Dv]), [0, 2, 1, 3]), [B * T, H * Dv]);
}

/**
 * Block output [B*T, nEmbd] for its input x [B*T, nEmbd]. Call inside tf.tidy or a gradient
 * function: intermediates are not disposed here.
 */
export function blockForward(x: tf.Tensor2D, w: LayerWeights, lora: BlockLora | null, ctx: SeqContext): tf.Tensor2D {
  const { config, B, T } = ctx;
  const { nHead, nHeadKv, headDim, headDimV, rmsEps } = config;
  const h = rmsNorm(x, w.attnNorm, rmsEps);
  let q = linear(h, w, "attn_q", lora, ctx);
  let k = linear(h, w, "attn_k", lora, ctx);
  let v = linear(h, w, "attn_v", lora, ctx);
  if (w.bias) {
    q = tf.add(q, w.bias.q);
    k = tf.add(k, w.bias.k);
    v = tf.add(v, w.bias.v);
  }
  let q4 = tf.reshape<tf.Rank.R4>(q, [B, T, nHead, headDim]);
  let k4 = tf.reshape<tf.Rank.R4>(k, [B, T, nHeadKv, headDim]);
  if (w.qNorm && w.kNorm) {
    q4 = rmsNorm(q4, w.qNorm, rmsEps);
    k4 = rmsNorm(k4, w.kNorm, rmsEps);
  }
  q4 = applyRope(q4, ctx.cos, ctx.sin, config);
  k4 = applyRope(k4, ctx.cos, ctx.sin, config);
  const v4 = tf.reshape<tf.Rank.R4>(v, [B, T, nHeadKv, headDimV]);
  const att = attention(q4, k4, v4, ctx);
  const x1 = tf.add<tf.Tensor2D>(x, linear(att, w, "attn_output", lora, ctx));
  const h2 = rmsNorm(x1, w.ffnNorm, rmsEps);
  const gate = linear(h2, w, "ffn_gate", lora, ctx);
  const up = linear(h2, w, "ffn_up", lora, ctx);
  const act = tf.mul<tf.Tensor2D>(tf.mul(gate, tf.sigmoid(gate)), up);
  return tf.add<tf.Tensor2D>(x1, linear(act, w, "ffn_down", lora, ctx));
}
