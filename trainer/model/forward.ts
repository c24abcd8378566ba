/**
 * The transformer body of llama / qwen2 / qwen3 as llama.cpp computes it: token embedding,
 * per block RMSNorm → attention (Q/K/V [+bias] [+per-head Q/K RMSNorm] → RoPE → grouped-query
 * causal softmax attention → output) residual, RMSNorm → SwiGLU MLP residual; final RMSNorm.
 * LoRA adds scale·(x·A)·B to each adapted linear layer. Differentiable w.r.t. LoRA variables.
 */
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "./base-model.js";
import type { ModelConfig } from "./config.js";
import { roundActivations } from "./activation-rounding.js";
import { mm, mmFrozen, mmT } from "./fast-matmul.js";
import { applyRope, ropeTables } from "./rope.js";
import type { LayerWeights, LinearName } from "./weights.js";

/** RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · w. */
export function rmsNorm<T extends tf.Tensor>(x: T, w: tf.Tensor1D, eps: number): T {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), w) as T;
}

function linear(x: tf.Tensor2D, layer: LayerWeights, name: LinearName, layerIndex: number, lora: LoraParams | null, emulate: boolean): tf.Tensor2D {
  const xw = emulate ? roundActivations(x, layer.types[name]) : x;
  const y = mmFrozen(xw, layer.linear[name]);
  const pair = lora?.pairs.get(`blk.${layerIndex}.${name}.weight`);
  if (!pair || !lora) return y;
  return tf.add(y, tf.mul(mm(mm(x, pair.a), pair.b), lora.scale)) as tf.Tensor2D;
}

/** Additive causal mask [T, T]: 0 on and below the diagonal, a large negative above. */
function causalMask(T: number): tf.Tensor2D {
  const m = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = -1e30;
  return tf.tensor2d(m, [T, T]);
}

/**
 * Grouped-query attention. q [B,T,H,D], k [B,T,Hkv,D], v [B,T,Hkv,Dv] → [B*T, H*Dv].
 * Query head h reads KV head floor(h / (H/Hkv)), as ggml's broadcast mul_mat does.
 */
function attention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor2D, config: ModelConfig): tf.Tensor2D {
  const [B, T, H, D] = q.shape;
  const Hkv = k.shape[2];
  const Dv = v.shape[3];
  const g = H / Hkv;
  // [B, T, Hkv, g, D] → [B, Hkv, g, T, D] → B*Hkv groups of [g*T, D]
  const qg = tf.unstack(tf.reshape(tf.transpose(tf.reshape(q, [B, T, Hkv, g, D]), [0, 2, 3, 1, 4]), [B * Hkv, g * T, D]));
  const kg = tf.unstack(tf.reshape(tf.transpose(k, [0, 2, 1, 3]), [B * Hkv, T, D]));
  const vg = tf.unstack(tf.reshape(tf.transpose(v, [0, 2, 1, 3]), [B * Hkv, T, Dv]));
  const scale = 1 / Math.sqrt(config.headDim);
  // A loop of 2-D products: rank-3 batched matMul is ~8x slower on wasm.
  const outs = qg.map((qi, i) => {
    const scores = tf.reshape(tf.mul(mmT(qi as tf.Tensor2D, kg[i] as tf.Tensor2D), scale), [g, T, T]);
    const probs = tf.reshape(tf.softmax(tf.add(scores, mask)), [g * T, T]) as tf.Tensor2D;
    return mm(probs, vg[i] as tf.Tensor2D); // [g*T, Dv]
  });
  const out = tf.stack(outs); // [B*Hkv, g*T, Dv]
  return tf.reshape(tf.transpose(tf.reshape(out, [B, Hkv, g, T, Dv]), [0, 3, 1, 2, 4]), [B * T, H * Dv]);
}

/**
 * Final hidden states [B*T, nEmbd] (after the output norm) for token ids [B, T] (right-padded;
 * with a causal mask, padding after a sequence never affects its real positions).
 * Call inside tf.tidy (or a gradient function) — intermediates are not disposed here.
 */
export function hiddenStates(model: BaseModel, lora: LoraParams | null, tokens: tf.Tensor2D): tf.Tensor2D {
  const { config, weights } = model;
  const [B, T] = tokens.shape;
  const N = B * T;
  const { nHead, nHeadKv, headDim, headDimV, rmsEps } = config;
  const { cos, sin } = ropeTables(config, T, weights.ropeFreqFactors);
  const mask = causalMask(T);
  const emulate = model.activationRounding === "llama.cpp-cpu";
  let x = tf.gather(weights.tokEmbd, tf.reshape(tokens, [N])) as tf.Tensor2D;
  weights.layers.forEach((layer, li) => {
    const h = rmsNorm(x, layer.attnNorm, rmsEps);
    let q = linear(h, layer, "attn_q", li, lora, emulate);
    let k = linear(h, layer, "attn_k", li, lora, emulate);
    let v = linear(h, layer, "attn_v", li, lora, emulate);
    if (layer.bias) {
      q = tf.add(q, layer.bias.q);
      k = tf.add(k, layer.bias.k);
      v = tf.add(v, layer.bias.v);
    }
    let q4 = tf.reshape(q, [B, T, nHead, headDim]) as tf.Tensor4D;
    let k4 = tf.reshape(k, [B, T, nHeadKv, headDim]) as tf.Tensor4D;
    if (layer.qNorm && layer.kNorm) {
      q4 = rmsNorm(q4, layer.qNorm, rmsEps);
      k4 = rmsNorm(k4, layer.kNorm, rmsEps);
    }
    q4 = applyRope(q4, cos, sin, config);
    k4 = applyRope(k4, cos, sin, config);
    const v4 = tf.reshape(v, [B, T, nHeadKv, headDimV]) as tf.Tensor4D;
    const att = attention(q4, k4, v4, mask, config);
    x = tf.add(x, linear(att, layer, "attn_output", li, lora, emulate));
    const h2 = rmsNorm(x, layer.ffnNorm, rmsEps);
    const gate = linear(h2, layer, "ffn_gate", li, lora, emulate);
    const up = linear(h2, layer, "ffn_up", li, lora, emulate);
    const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D;
    x = tf.add(x, linear(act, layer, "ffn_down", li, lora, emulate));
  });
  const out = rmsNorm(x, weights.outputNorm, rmsEps);
  return emulate ? roundActivations(out, weights.outputType) : out;
}
