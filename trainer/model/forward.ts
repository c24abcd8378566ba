/**
 * The model body, one block at a time: token embedding (rows gathered on the host), every
 * block in order (each block's weights acquired from the base and released after it), final
 * RMSNorm. The trainer keeps each block's input when it will run the backward pass
 * (backward.ts recomputes one block at a time from it: gradient checkpointing per block).
 */
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "./base-model.js";
import { blockForward, causalMask, type BlockLora, type SeqContext } from "./block.js";
import { rmsNorm } from "./norm.js";
import { ropeRows } from "./rope.js";
import { disposeRecorded, recordForward, type RecordedForward } from "./tape.js";
import { LINEAR_NAMES, type LayerWeights } from "./weights.js";

export { rmsNorm } from "./norm.js";

/**
 * Token ids of a batch as the rows of one matrix: sequence b at rows [offsets[b], offsets[b] +
 * lens[b]). Packed (logprobs.ts planBatch's default on wasm and cpu), each sequence holds only
 * its own tokens, one after another, and every linear layer multiplies real tokens only; padded
 * (row-major [B, T], right-padded with id 0), lens are all T.
 */
export interface TokenGrid {
  /** [rows] */
  ids: Int32Array;
  /** Sequences. */
  B: number;
  /** The longest sequence. */
  T: number;
  offsets: number[];
  lens: number[];
  /** Σ lens: B·T when padded. */
  rows: number;
  packed: boolean;
}

/** The layout of a padded grid of B sequences of T tokens (offsets b·T, lens T). */
export function paddedLayout(B: number, T: number): Pick<TokenGrid, "B" | "T" | "offsets" | "lens" | "rows" | "packed"> {
  return { B, T, offsets: Array.from({ length: B }, (_, b) => b * T), lens: new Array<number>(B).fill(T), rows: B * T, packed: false };
}

type Tick = (tokenBlocks: number) => void;

/**
 * Shared per-batch tensors (RoPE per row, a causal mask per sequence length) for `grid`'s
 * layout, or for a padded grid of B × T (`seqContext(model, B, T)`); dispose() frees them.
 * `tick`: see SeqContext.
 */
export function seqContext(model: BaseModel, grid: Pick<TokenGrid, "offsets" | "lens" | "B" | "T" | "rows">, tick?: Tick): SeqContext & { dispose(): void };
export function seqContext(model: BaseModel, B: number, T: number, tick?: Tick): SeqContext & { dispose(): void };
export function seqContext(
  model: BaseModel,
  a: Pick<TokenGrid, "offsets" | "lens" | "B" | "T" | "rows"> | number,
  b?: number | Tick,
  c?: Tick,
): SeqContext & { dispose(): void } {
  const lay = typeof a === "number" ? paddedLayout(a, b as number) : a;
  const tick = typeof a === "number" ? c : (b as Tick | undefined);
  const { cos, sin } = ropeRows(model.config, lay.lens, model.weights.ropeFreqFactors);
  const masks = new Map<number, tf.Tensor2D>();
  for (const len of lay.lens) if (len > 0 && !masks.has(len)) masks.set(len, causalMask(len));
  return {
    config: model.config,
    B: lay.B,
    T: lay.T,
    rows: lay.rows,
    offsets: lay.offsets,
    lens: lay.lens,
    cos,
    sin,
    masks,
    rounding: null,
    tick,
    dispose: () => tf.dispose([cos, sin, ...masks.values()]),
  };
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
    ctx.tick?.(ctx.rows);
    return y;
  } finally {
    model.weights.releaseLayer(w);
  }
}

/**
 * A block whose forward ran with the gradient tape on: its activations, kept for a backward
 * without recompute. `weights` is the holder the recorded gradients read the linear weights
 * from; the forward released them (a streamed block's are freed), and the backward binds the
 * block's weights, acquired again, into it before replaying (rebindKept).
 */
export interface KeptBlock extends RecordedForward {
  weights: LayerWeights;
}

/** Runs block `l` on x with the gradient tape on (tape.ts), keeping its activations. */
function recordBlock(model: BaseModel, lora: LoraParams, l: number, x: tf.Tensor2D, ctx: SeqContext): KeptBlock {
  const w = model.weights.layer(l);
  const holder: LayerWeights = { ...w, linear: { ...w.linear } };
  try {
    const rounding = model.activationRounding === "llama.cpp-cpu" ? model.weights.types[l] : null;
    const rec = recordForward(() => blockForward(x, holder, blockLora(lora, l), { ...ctx, rounding }));
    ctx.tick?.(ctx.rows);
    return { ...rec, weights: holder };
  } finally {
    model.weights.releaseLayer(w);
  }
}

/** Points a kept block's recorded gradients at its weights as acquired now (`w`, from model.weights.layer). */
export function rebindKept(kept: KeptBlock, w: LayerWeights): void {
  Object.assign(kept.weights.linear, w.linear);
}

/**
 * How many of the last blocks a training forward keeps on the tape (their activations, so the
 * backward does not run them again): `asked`, bounded by the blocks.
 */
export function keptBlocksFor(model: BaseModel, asked: number | undefined): number {
  if (!asked || asked <= 0) return 0;
  return Math.min(model.config.nLayer, Math.floor(asked));
}

export interface BodyResult {
  /** Output of the last block [rows, nEmbd], before the final norm. */
  final: tf.Tensor2D;
  /** Input of each block (when asked to keep them), block 0's being the embeddings. */
  inputs: tf.Tensor2D[] | null;
  /**
   * Per block, its recorded forward when its activations were kept (the last `keptBlocks`
   * blocks), else null; null when none was kept. backward.ts replays these instead of recomputing.
   */
  tapes?: Array<KeptBlock | null> | null;
}

/** Frees what a body holds (an error, or a pass that will not run its backward). */
export function disposeBody(body: BodyResult): void {
  tf.dispose([body.final, ...(body.inputs ?? []).filter((t) => !t.isDisposed)]);
  for (const t of body.tapes ?? []) if (t) disposeRecorded(t);
}

/**
 * Runs every block without a gradient tape. Returned tensors belong to the caller.
 * With `keepInputs`, each block's input is kept for backward.ts (n_layer × rows × nEmbd floats).
 * With `keptBlocks` > 0 (and an adapter), the last `keptBlocks` blocks run with the tape on and
 * keep their activations too (keptBlocksFor bounds it).
 */
export function runBody(model: BaseModel, lora: LoraParams | null, grid: TokenGrid, ctx: SeqContext, keepInputs: boolean, keptBlocks = 0): BodyResult {
  if (grid.rows !== ctx.rows || grid.ids.length !== grid.rows) throw new Error(`runBody: the batch has ${grid.rows} rows but its context ${ctx.rows}`);
  let x = model.weights.embed(grid.ids);
  const inputs: tf.Tensor2D[] | null = keepInputs ? [] : null;
  const nLayer = model.config.nLayer;
  const kept = keepInputs && lora ? keptBlocksFor(model, keptBlocks) : 0;
  const tapes: Array<KeptBlock | null> | null = kept > 0 ? [] : null;
  try {
    for (let l = 0; l < nLayer; l++) {
      let next: tf.Tensor2D;
      if (tapes && l >= nLayer - kept) {
        const rec = recordBlock(model, lora!, l, x, ctx);
        tapes.push(rec);
        next = rec.y;
      } else {
        tapes?.push(null);
        next = runBlock(model, lora, l, x, ctx);
      }
      if (inputs) inputs.push(x);
      else x.dispose();
      x = next;
    }
  } catch (e) {
    x.dispose();
    if (inputs) tf.dispose(inputs);
    for (const t of tapes ?? []) if (t) disposeRecorded(t);
    throw e;
  }
  return { final: x, inputs, tapes };
}

/**
 * Final hidden states [rows, nEmbd] (after the output norm) of a batch's rows (a padded grid's
 * padding comes after each sequence: with a causal mask it never affects the real positions).
 * No tape: use backward.ts for gradients.
 */
export function hiddenStates(model: BaseModel, lora: LoraParams | null, grid: TokenGrid): tf.Tensor2D {
  const ctx = seqContext(model, grid);
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
