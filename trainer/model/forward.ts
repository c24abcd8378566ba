/**
 * The model body, one block at a time: token embedding (rows gathered on the host), every
 * block in order (each block's weights acquired from the base and released after it), final
 * RMSNorm. The trainer keeps each block's input when it will run the backward pass
 * (backward.ts recomputes one block at a time from it: gradient checkpointing per block).
 */
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "./base-model.js";
import { blockForward, causalMask, rmsNorm, type BlockLora, type SeqContext } from "./block.js";
import { ropeTables } from "./rope.js";
import { LINEAR_NAMES } from "./weights.js";

export { rmsNorm } from "./block.js";

/** Token ids of a right-padded batch, row-major [B, T]. */
export interface TokenGrid {
  ids: Int32Array;
  B: number;
  T: number;
}

/** Shared per-batch tensors (RoPE tables, causal mask); dispose() frees them. `tick`: see SeqContext. */
export function seqContext(model: BaseModel, B: number, T: number, tick?: (tokenBlocks: number) => void): SeqContext & { dispose(): void } {
  const { cos, sin } = ropeTables(model.config, T, model.weights.ropeFreqFactors);
  const mask = causalMask(T);
  return { config: model.config, B, T, cos, sin, mask, rounding: null, tick, dispose: () => tf.dispose([cos, sin, mask]) };
}

/** Block `l`'s slice of the adapter (null when there is none). */
export function blockLora(lora: LoraParams | null, l: number): BlockLora | null {
  if (!lora) return null;
  const pairs: BlockLora["pairs"] = {};
  for (const n of LINEAR_NAMES) {
    const p = lora.pairs.get(`blk.${l}.${n}.weight`);
    if (p) pairs[n] = { a: p.a, b: p.b };
  }
  return { scale: lora.scale, pairs };
}

/** Runs block `l` on x (no tape), acquiring and releasing its weights. */
export function runBlock(model: BaseModel, lora: LoraParams | null, l: number, x: tf.Tensor2D, ctx: SeqContext): tf.Tensor2D {
  const w = model.weights.layer(l);
  try {
    const rounding = model.activationRounding === "llama.cpp-cpu" ? model.weights.types[l] : null;
    const y = tf.tidy(() => blockForward(x, w, blockLora(lora, l), { ...ctx, rounding }));
    ctx.tick?.(ctx.B * ctx.T);
    return y;
  } finally {
    model.weights.releaseLayer(w);
  }
}

export interface BodyResult {
  /** Output of the last block [B*T, nEmbd], before the final norm. */
  final: tf.Tensor2D;
  /** Input of each block (when asked to keep them), block 0's being the embeddings. */
  inputs: tf.Tensor2D[] | null;
}

/**
 * Runs every block without a gradient tape. Returned tensors belong to the caller.
 * With `keepInputs`, each block's input is kept for backward.ts (n_layer × B·T × nEmbd floats).
 */
export function runBody(model: BaseModel, lora: LoraParams | null, grid: TokenGrid, ctx: SeqContext, keepInputs: boolean): BodyResult {
  let x = model.weights.embed(grid.ids);
  const inputs: tf.Tensor2D[] | null = keepInputs ? [] : null;
  try {
    for (let l = 0; l < model.config.nLayer; l++) {
      const next = runBlock(model, lora, l, x, ctx);
      if (inputs) inputs.push(x);
      else x.dispose();
      x = next;
    }
  } catch (e) {
    x.dispose();
    if (inputs) tf.dispose(inputs);
    throw e;
  }
  return { final: x, inputs };
}

/**
 * Final hidden states [B*T, nEmbd] (after the output norm) for a right-padded batch (with a
 * causal mask, padding after a sequence never affects its real positions). No tape: use
 * backward.ts for gradients.
 */
export function hiddenStates(model: BaseModel, lora: LoraParams | null, grid: TokenGrid): tf.Tensor2D {
  const ctx = seqContext(model, grid.B, grid.T);
  try {
    const { final } = runBody(model, lora, grid, ctx, false);
    return tf.tidy(() => {
      const out = rmsNorm(final, model.weights.outputNorm, model.config.rmsEps);
      final.dispose();
      return out;
    });
  } finally {
    ctx.dispose();
  }
}
