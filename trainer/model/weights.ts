/**
 * The frozen base weights as f32 tfjs tensors, dequantized from the GGUF exactly as stored.
 * Linear weights are kept transposed to [in, out] (GGUF stores row-major [out, in], ggml
 * ne = [in, out]) so that y = x·W is a plain matMul: on wasm, transposed products are
 * 10–25x slower (see fast-matmul.ts).
 */
import * as tf from "@tensorflow/tfjs-core";
import { findTensor, readTensorF32, type GgufFile } from "../gguf/reader.js";
import { GgmlType, GgufError } from "../gguf/types.js";
import type { ModelConfig } from "./config.js";

/** The linear layers of a block that LoRA can adapt, by their GGUF name part. */
export const LINEAR_NAMES = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"] as const;
export type LinearName = (typeof LINEAR_NAMES)[number];

export interface LayerWeights {
  attnNorm: tf.Tensor1D;
  /** [in, out] each. */
  linear: Record<LinearName, tf.Tensor2D>;
  /** Storage type of each linear weight in the GGUF (for activation-rounding emulation). */
  types: Record<LinearName, GgmlType>;
  /** qwen2 only. */
  bias?: { q: tf.Tensor1D; k: tf.Tensor1D; v: tf.Tensor1D };
  /** qwen3 only: [headDim]. */
  qNorm?: tf.Tensor1D;
  kNorm?: tf.Tensor1D;
  ffnNorm: tf.Tensor1D;
}

export interface ModelWeights {
  /** [nVocab, nEmbd] (rows are gathered). */
  tokEmbd: tf.Tensor2D;
  layers: LayerWeights[];
  outputNorm: tf.Tensor1D;
  /**
   * The output projection in GGUF's layout [nVocab, nEmbd]; the same tensor as tokEmbd when
   * tied. Use outputLogits() (matMul(h, output, false, true) is slow on wasm).
   */
  output: tf.Tensor2D;
  outputType: GgmlType;
  /** `rope_freqs.weight` (Llama 3.x): per rotary pair, θ is divided by this factor. */
  ropeFreqFactors?: Float32Array;
}

/** `[in, out]` of a block's linear layer, in ggml ne order. */
export function linearShape(config: ModelConfig, name: LinearName): [number, number] {
  const qOut = config.nHead * config.headDim;
  const kOut = config.nHeadKv * config.headDim;
  const vOut = config.nHeadKv * config.headDimV;
  switch (name) {
    case "attn_q":
      return [config.nEmbd, qOut];
    case "attn_k":
      return [config.nEmbd, kOut];
    case "attn_v":
      return [config.nEmbd, vOut];
    case "attn_output":
      return [config.nHead * config.headDimV, config.nEmbd];
    case "ffn_gate":
    case "ffn_up":
      return [config.nEmbd, config.nFf];
    case "ffn_down":
      return [config.nFf, config.nEmbd];
  }
}

/** Loads every tensor the forward pass needs, checking shapes against the config. */
export function loadWeights(file: GgufFile, config: ModelConfig): ModelWeights {
  const made: tf.Tensor[] = [];
  const typeOf = (name: string): GgmlType => findTensor(file, name)?.type ?? GgmlType.F32;
  const load = (name: string, ne: number[], transpose = false): tf.Tensor => {
    const info = findTensor(file, name);
    if (!info) throw new GgufError(file.path, `missing tensor '${name}'`);
    if (info.dims.length !== ne.length || info.dims.some((d, i) => d !== ne[i])) {
      throw new GgufError(file.path, `tensor '${name}' has shape [${info.dims.join(", ")}], expected [${ne.join(", ")}]`);
    }
    // tfjs shapes are outermost-first: the reverse of ggml's ne.
    const t = tf.tensor(readTensorF32(file, info), [...ne].reverse(), "float32");
    if (!transpose) {
      made.push(t);
      return t;
    }
    const tt = tf.transpose(t);
    t.dispose();
    made.push(tt);
    return tt;
  };
  try {
    const { nEmbd, nVocab, headDim } = config;
    const tokEmbd = load("token_embd.weight", [nEmbd, nVocab]) as tf.Tensor2D;
    const layers: LayerWeights[] = [];
    for (let i = 0; i < config.nLayer; i++) {
      const p = `blk.${i}.`;
      const linear = {} as Record<LinearName, tf.Tensor2D>;
      for (const n of LINEAR_NAMES) linear[n] = load(`${p}${n}.weight`, linearShape(config, n), true) as tf.Tensor2D;
      const types = {} as Record<LinearName, GgmlType>;
      for (const n of LINEAR_NAMES) types[n] = typeOf(`${p}${n}.weight`);
      const layer: LayerWeights = {
        attnNorm: load(`${p}attn_norm.weight`, [nEmbd]) as tf.Tensor1D,
        linear,
        types,
        ffnNorm: load(`${p}ffn_norm.weight`, [nEmbd]) as tf.Tensor1D,
      };
      if (config.qkvBias) {
        layer.bias = {
          q: load(`${p}attn_q.bias`, [linearShape(config, "attn_q")[1]]) as tf.Tensor1D,
          k: load(`${p}attn_k.bias`, [linearShape(config, "attn_k")[1]]) as tf.Tensor1D,
          v: load(`${p}attn_v.bias`, [linearShape(config, "attn_v")[1]]) as tf.Tensor1D,
        };
      }
      if (config.qkNorm) {
        layer.qNorm = load(`${p}attn_q_norm.weight`, [headDim]) as tf.Tensor1D;
        layer.kNorm = load(`${p}attn_k_norm.weight`, [headDim]) as tf.Tensor1D;
      }
      layers.push(layer);
    }
    const outputNorm = load("output_norm.weight", [nEmbd]) as tf.Tensor1D;
    // Kept [nVocab, nEmbd] (no transposed copy): logits are computed as (W·hᵀ)ᵀ and the
    // gradient as g·W, which together beat a [nEmbd, nVocab] copy on wasm and save its memory.
    const output = config.tiedOutput ? tokEmbd : (load("output.weight", [nEmbd, nVocab]) as tf.Tensor2D);
    const outputType = typeOf(config.tiedOutput ? "token_embd.weight" : "output.weight");
    const weights: ModelWeights = { tokEmbd, layers, outputNorm, output, outputType };
    const rf = findTensor(file, "rope_freqs.weight");
    if (rf) {
      if (rf.dims.length !== 1 || rf.dims[0] !== config.ropeDim / 2) {
        throw new GgufError(file.path, `tensor 'rope_freqs.weight' has shape [${rf.dims.join(", ")}], expected [${config.ropeDim / 2}]`);
      }
      weights.ropeFreqFactors = readTensorF32(file, rf);
    }
    return weights;
  } catch (e) {
    tf.dispose(made);
    throw e;
  }
}

export function disposeWeights(w: ModelWeights): void {
  const all: tf.Tensor[] = [w.tokEmbd, w.outputNorm];
  if (w.output !== w.tokEmbd) all.push(w.output);
  for (const l of w.layers) {
    all.push(l.attnNorm, l.ffnNorm, ...Object.values(l.linear));
    if (l.bias) all.push(l.bias.q, l.bias.k, l.bias.v);
    if (l.qNorm) all.push(l.qNorm);
    if (l.kNorm) all.push(l.kNorm);
  }
  tf.dispose(all);
}
