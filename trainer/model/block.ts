/**
 * One transformer block of llama / qwen2 / qwen3 as llama.cpp computes it: RMSNorm → attention
 * (Q/K/V [+bias] [+per-head Q/K RMSNorm] → RoPE → grouped-query causal softmax attention →
 * output) residual, RMSNorm → SwiGLU MLP residual. LoRA adds scale·(x·A)·B to each adapted
 * linear layer. A pure function of its inputs, so the trainer can run it once without a tape
 * (forward) and again under tf.grads (backward, one block at a time). A batch's sequences are
 * the rows of one matrix (SeqContext): each linear layer is one product over all of them, and
 * only attention and RoPE look at where one sequence ends and the next begins.
 */
import * as tf from "@tensorflow/tfjs-core";
import type { ModelConfig } from "../../models/arch/config.js";
import { roundActivations } from "./activation-rounding.js";
import { hostAttention } from "./attention-host.js";
import { causalSoftmax } from "./attention-softmax.js";
import { batchedProducts, frozenLinear, isHostMatrix, mm, mmT } from "./fast-matmul.js";
import { hostLoraLinear } from "./lora-linear.js";
import { rmsNorm } from "./norm.js";
import { applyRope } from "./rope.js";
import { swiglu } from "./swiglu.js";
import type { GgmlType } from "../../models/gguf/types.js";
import type { LayerWeights, LinearName } from "./weights.js";

/** The adapter of one block: A [in, rank] and B [rank, out] per adapted linear layer. */
export interface BlockLora {
  scale: number;
  pairs: Partial<Record<LinearName, { a: tf.Tensor2D; b: tf.Tensor2D }>>;
}

/**
 * What every block of one batch shares. The batch's tokens are the rows of one matrix: sequence
 * b at rows [offsets[b], offsets[b] + lens[b]). Packed (forward.ts TokenGrid), lens are the
 * sequences' own lengths; a padded grid is lens all equal to T, offsets b·T.
 */
export interface SeqContext {
  config: ModelConfig;
  /** Sequences. */
  B: number;
  /** The longest sequence (the width of a padded grid). */
  T: number;
  /** Rows of the batch's matrices: Σ lens. */
  rows: number;
  offsets: readonly number[];
  lens: readonly number[];
  /** RoPE per row [rows, nRot/2]: each sequence's positions start at 0. */
  cos: tf.Tensor2D;
  sin: tf.Tensor2D;
  /** Additive causal masks [L, L], one per distinct sequence length L. */
  masks: ReadonlyMap<number, tf.Tensor2D>;
  /** Round activations as llama.cpp's CPU backend does for each weight type (parity tool). */
  rounding: Record<LinearName, GgmlType> | null;
  /**
   * Called after each block a pass runs, with the work done in token-blocks (rows for a forward
   * block, 2·rows for a backward one: recompute and gradient): the progress a long step reports.
   */
  tick?: (tokenBlocks: number) => void;
}

let batchedOverride: boolean | undefined;

/**
 * Whether attention runs as one batched product per step over sequences of equal length (GPU
 * backends: fast-matmul.ts batchedProducts) rather than a loop of 2-D products (wasm, cpu).
 */
export function batchedAttention(): boolean {
  return batchedOverride ?? batchedProducts();
}

/** Forces batchedAttention() (tests run the GPU backends' path on the CPU); undefined: the backend's. */
export function setBatchedAttention(v: boolean | undefined): void {
  batchedOverride = v;
}

/** Additive causal mask [T, T]: 0 on and below the diagonal, a large negative above. */
export function causalMask(T: number): tf.Tensor2D {
  const m = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = -1e30;
  return tf.tensor2d(m, [T, T]);
}

function linear(x: tf.Tensor2D, w: LayerWeights, name: LinearName, lora: BlockLora | null, ctx: SeqContext): tf.Tensor2D {
  const pair = lora?.pairs[name];
  const weight = w.linear[name];
  if (pair && lora && !ctx.rounding && isHostMatrix(weight)) {
    // One custom op adding the LoRA branch into the native products (lora-linear.ts), where built.
    const fused = hostLoraLinear(x, weight, pair.a, pair.b, lora.scale, () => w.linear[name]);
    if (fused) return fused;
  }
  const xw = ctx.rounding ? roundActivations(x, ctx.rounding[name]) : x;
  // The gradient reads w.linear[name] when it runs: a kept block's holder is re-bound then (forward.ts).
  const y = frozenLinear(xw, weight, () => w.linear[name]);
  if (!pair || !lora) return y;
  // The scale on the [rows, rank] product, not the [rows, out] one: the same values (exactly, for
  // the default scale 2), with 4864-wide multiplies in the forward and backward gone.
  return tf.add<tf.Tensor2D>(y, mm(tf.mul(mm(x, pair.a), lora.scale), pair.b));
}

/**
 * Grouped-query causal attention over a grid of B sequences of T rows each, with `mask` [T, T].
 * q [B,T,H,D], k [B,T,Hkv,D], v [B,T,Hkv,Dv] → [B*T, H*Dv]. Query head h reads KV head
 * floor(h / (H/Hkv)), as ggml's broadcast mul_mat does.
 */
function attentionGrid(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor2D, batched: boolean, ctx: SeqContext): tf.Tensor2D {
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
  if (!batched) {
    // A loop of 2-D products: rank-3 batched matMul is ~8x slower on wasm.
    const [qg, kg, vg] = [tf.unstack(q3), tf.unstack(k3), tf.unstack(v3)];
    out = tf.stack(
      qg.map((qi, i) => {
        const probs = causalSoftmax(mmT(qi as tf.Tensor2D, kg[i] as tf.Tensor2D), scale, mask);
        return mm(probs, vg[i] as tf.Tensor2D); // [g*T, Dv]
      }),
    );
  } else {
    // GPUs: one batched product per step of the attention, not 2·B·Hkv small dispatches.
    const scores = tf.reshape(tf.mul(tf.matMul(q3, k3, false, true), scale), [B * Hkv, g, T, T]);
    const probs = tf.reshape(tf.softmax(tf.add(scores, mask)), [B * Hkv, g * T, T]);
    out = tf.matMul(probs, v3);
  }
  // [B*Hkv, g*T, Dv] is [B, H, T, Dv] in memory.
  return tf.reshape(tf.transpose(tf.reshape(out, [B, H, T, Dv]), [0, 2, 1, 3]), [B * T, H * Dv]);
}

/**
 * Attention of the batch's rows, each sequence attending causally to its own rows only.
 * q [1,rows,H,D], k [1,rows,Hkv,D], v [1,rows,Hkv,Dv] → [rows, H*Dv]. Sequences of one length
 * (a padded grid, or a packed batch of equal lengths) run as one [B, T] grid; a packed batch of
 * different lengths runs one sequence at a time, each with its own length's mask.
 */
function attention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, ctx: SeqContext): tf.Tensor2D {
  const { lens, offsets } = ctx;
  const batched = batchedAttention();
  if (!batched) {
    // One op on the host, where the native addon runs the products (attention-host.ts).
    const host = hostAttention(q, k, v, ctx, 1 / Math.sqrt(ctx.config.headDim));
    if (host) return host;
  }
  const [, , H, D] = q.shape;
  const [Hkv, Dv] = [k.shape[2], v.shape[3]];
  const L = lens[0];
  if (lens.every((l) => l === L)) {
    const B = lens.length;
    const grid = (x: tf.Tensor4D, h: number, d: number) => tf.reshape<tf.Rank.R4>(x, [B, L, h, d]);
    return attentionGrid(grid(q, H, D), grid(k, Hkv, D), grid(v, Hkv, Dv), ctx.masks.get(L)!, batched, ctx);
  }
  const parts: tf.Tensor2D[] = [];
  lens.forEach((len, i) => {
    if (len === 0) return;
    const seq = (x: tf.Tensor4D, h: number, d: number) => tf.slice(x, [0, offsets[i], 0, 0], [1, len, h, d]);
    parts.push(attentionGrid(seq(q, H, D), seq(k, Hkv, D), seq(v, Hkv, Dv), ctx.masks.get(len)!, batched, ctx));
  });
  return parts.length === 1 ? parts[0] : tf.concat<tf.Tensor2D>(parts);
}

/**
 * Block output [rows, nEmbd] for its input x [rows, nEmbd] (the batch's rows: SeqContext). Call
 * inside tf.tidy or a gradient function: intermediates are not disposed here.
 */
export function blockForward(x: tf.Tensor2D, w: LayerWeights, lora: BlockLora | null, ctx: SeqContext): tf.Tensor2D {
  const { config, rows } = ctx;
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
  // All rows as one sequence axis: RoPE per row (ctx.cos/sin), attention per sequence.
  let q4 = tf.reshape<tf.Rank.R4>(q, [1, rows, nHead, headDim]);
  let k4 = tf.reshape<tf.Rank.R4>(k, [1, rows, nHeadKv, headDim]);
  if (w.qNorm && w.kNorm) {
    q4 = rmsNorm(q4, w.qNorm, rmsEps);
    k4 = rmsNorm(k4, w.kNorm, rmsEps);
  }
  q4 = applyRope(q4, ctx.cos, ctx.sin, config);
  k4 = applyRope(k4, ctx.cos, ctx.sin, config);
  const v4 = tf.reshape<tf.Rank.R4>(v, [1, rows, nHeadKv, headDimV]);
  const att = attention(q4, k4, v4, ctx);
  const x1 = tf.add<tf.Tensor2D>(x, linear(att, w, "attn_output", lora, ctx));
  const h2 = rmsNorm(x1, w.ffnNorm, rmsEps);
  const gate = linear(h2, w, "ffn_gate", lora, ctx);
  const up = linear(h2, w, "ffn_up", lora, ctx);
  const act = swiglu(gate, up);
  return tf.add<tf.Tensor2D>(x1, linear(act, w, "ffn_down", lora, ctx));
}
