/**
 * The shapes of a block's weights and where they may live: plain data, free of tfjs, so that
 * the memory plan (and the core and CLI that ask it whether a model trains) can use them
 * without loading a tensor library. weights.ts holds the tensors themselves.
 */
import type { ModelConfig } from "./config.js";

/** The linear layers of a block that LoRA can adapt, by their GGUF name part. */
export const LINEAR_NAMES = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"] as const;
export type LinearName = (typeof LINEAR_NAMES)[number];

export type Placement = "device" | "host-f32" | "host-packed";

/** Where the block weights and the output projection live (weights.ts says what each placement costs). */
export interface WeightPlacement {
  layers: Placement;
  head: Placement;
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

/** Rows of the output projection per slice: bounds the logits a head pass holds at once. */
export const DEFAULT_HEAD_CHUNK_ROWS = 16384;

/**
 * The output projection's cost for one row, in the unit of the progress meters (one token
 * through one block's linear layers): nVocab·nEmbd against the block's Σ in·out. At a real
 * vocabulary it is large (Qwen2.5-0.5B: ~9 blocks a row), so the gate's head passes are counted.
 */
export function headRowBlocks(config: ModelConfig): number {
  return (config.nVocab * config.nEmbd) / blockLinearElements(config);
}

/** Σ in·out over a block's linear layers: its weights but norms and biases. */
export function blockLinearElements(config: ModelConfig): number {
  return LINEAR_NAMES.reduce((a, n) => {
    const [i, o] = linearShape(config, n);
    return a + i * o;
  }, 0);
}
