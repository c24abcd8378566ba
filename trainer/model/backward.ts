/**
 * The backward pass, one block at a time (gradient checkpointing per block): the forward kept
 * only each block's input (forward.ts runBody with keepInputs); here each block, last to
 * first, is run again under tf.grads with its weights acquired from the base, giving the
 * gradient w.r.t. its input (passed on to the block before) and w.r.t. its LoRA matrices.
 * Backend memory holds one block's activations (and, when streamed, one block's weights) at a
 * time, plus the n_layer block inputs. Blocks whose forward kept its activations (forward.ts
 * runBody's keptBlocks, as the memory plan allows) are not run again: their recorded tape is
 * back-propagated (tape.ts).
 */
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "./base-model.js";
import { blockForward, type BlockLora, type SeqContext } from "./block.js";
import { rmsNorm } from "./norm.js";
import { onRows, scoredRows, type BatchPlan } from "./logprobs.js";
import { rebindKept, type KeptBlock } from "./forward.js";
import { disposeRecorded, replayGrads } from "./tape.js";
import { LINEAR_NAMES, type LinearName } from "./weights.js";

/** Gradients by LoRA variable key: `<base tensor>.lora_a` / `.lora_b` (adapter tensor names). */
export type LoraGrads = Map<string, tf.Tensor2D>;

/**
 * ∂L/∂(LoRA) from ∂L/∂h, h being the final-normed scored rows [n, nEmbd] of `plan`.
 * Consumes (disposes) `inputs` and `final` as it goes; returns tensors the caller owns.
 */
export function backwardBody(
  model: BaseModel,
  lora: LoraParams,
  plan: BatchPlan,
  body: { inputs: tf.Tensor2D[]; final: tf.Tensor2D; tapes?: Array<KeptBlock | null> | null },
  dh: tf.Tensor2D,
  ctx: SeqContext,
): LoraGrads {
  const { rmsEps } = model.config;
  const grads: LoraGrads = new Map();
  // Through the final norm (scored rows only), then back onto the batch's rows (zeros where unscored).
  let dy = tf.tidy(() => {
    const rows = scoredRows(body.final, plan);
    const [dRows] = tf.grads((r: tf.Tensor) => rmsNorm(r as tf.Tensor2D, model.weights.outputNorm, rmsEps))([rows], dh);
    return onRows(dRows as tf.Tensor2D, plan);
  });
  body.final.dispose();
  try {
    for (let l = model.config.nLayer - 1; l >= 0; l--) {
      const names = LINEAR_NAMES.filter((n) => lora.pairs.has(`blk.${l}.${n}.weight`));
      const vars = names.flatMap((n) => {
        const p = lora.pairs.get(`blk.${l}.${n}.weight`)!;
        return [p.a, p.b];
      });
      const tape = body.tapes?.[l];
      let out: tf.Tensor[];
      const w = model.weights.layer(l);
      if (tape) {
        // Activations kept by the forward: back-propagate its recorded tape, no recompute (its
        // linear gradients read the weights acquired now).
        body.tapes![l] = null;
        try {
          rebindKept(tape, w);
          out = replayGrads(tape, [body.inputs[l], ...vars], dy);
        } finally {
          model.weights.releaseLayer(w);
        }
        ctx.tick?.(ctx.rows);
      } else {
        try {
          const f = (x: tf.Tensor, ...ab: tf.Tensor[]) => {
            const pairs: BlockLora["pairs"] = {};
            names.forEach((n: LinearName, i) => (pairs[n] = { a: ab[2 * i] as tf.Tensor2D, b: ab[2 * i + 1] as tf.Tensor2D }));
            return blockForward(x as tf.Tensor2D, w, { scale: lora.scale, pairs }, ctx);
          };
          out = tf.grads(f)([body.inputs[l], ...vars], dy);
        } finally {
          model.weights.releaseLayer(w);
        }
        ctx.tick?.(2 * ctx.rows);
      }
      body.inputs[l].dispose();
      dy.dispose();
      dy = out[0] as tf.Tensor2D;
      names.forEach((n, i) => {
        grads.set(`blk.${l}.${n}.weight.lora_a`, out[1 + 2 * i] as tf.Tensor2D);
        grads.set(`blk.${l}.${n}.weight.lora_b`, out[2 + 2 * i] as tf.Tensor2D);
      });
    }
  } catch (e) {
    tf.dispose([...grads.values(), ...body.inputs.filter((t) => !t.isDisposed)]);
    for (const t of body.tapes ?? []) if (t) disposeRecorded(t);
    throw e;
  } finally {
    dy.dispose();
  }
  return grads;
}
