/**
 * Per-token log-probabilities of given tokens under the model (optionally with LoRA):
 * log p(tokens[b][t] | tokens[b][<t]) for t in [targetStart[b], len_b). Only the rows that
 * predict scored tokens go through the head (head.ts: the vocabulary one slice at a time).
 * No gradient: the trainer differentiates with backward.ts.
 *
 * The batch's layout is chosen here (packedLayout): packed, every sequence's tokens one after
 * another with no padding, on backends that loop over attention's 2-D products (wasm, cpu);
 * a right-padded [B, T] grid where attention is one batched product over equal-length
 * sequences (GPU backends).
 */
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import { roundActivations } from "./activation-rounding.js";
import type { BaseModel } from "./base-model.js";
import { batchedAttention } from "./block.js";
import { rmsNorm } from "./norm.js";
import { runBody, seqContext, type TokenGrid } from "./forward.js";
import { headForward, type HeadResult } from "./head.js";
import { linearNoGrad } from "./fast-matmul.js";

export interface TokenBatch {
  /** One token-id list per sequence (lengths may differ: packed, or right-padded on GPU backends: packedLayout). */
  tokens: number[][];
  /** First position scored in each sequence (≥ 1: position 0 has no context). */
  targetStart: number[];
}

export interface TokenLogProbsOptions {
  /** Also return the top-k next-token log-probs at each scored position. */
  topK?: number;
}

export interface TokenLogProbs {
  /** [B, Tmax]: log p of each scored token, 0 where not scored. */
  logprobs: tf.Tensor2D;
  /** [B, Tmax]: 1 where scored, else 0. */
  mask: tf.Tensor2D;
  /** [B, Tmax, k]: top-k ids (int32) and log-probs of the distribution predicting token t; 0 where not scored. */
  topK?: { ids: tf.Tensor3D; logprobs: tf.Tensor3D };
}

/** One sequence's scored span: positions [start, end) of sequence b, predicted from its rows start−1.. . */
export interface Span {
  b: number;
  start: number;
  end: number;
}

/** A validated batch: its rows (grid), each sequence's scored span, the targets in span order. */
export interface BatchPlan {
  grid: TokenGrid;
  spans: Span[];
  /** Scored token ids, spans concatenated in order (n of them). */
  targets: Int32Array;
  /** [B*Tmax] (tokenLogProbs' output layout, whatever the grid's): 1 where scored. */
  mask: Float32Array;
}

let layoutOverride: "packed" | "padded" | undefined;

/**
 * Forces the layout planBatch (and the micro-batch split) uses: benches and tests compare the
 * two in one process; undefined returns to the backend's choice.
 */
export function setBatchLayout(layout: "packed" | "padded" | undefined): void {
  layoutOverride = layout;
}

/**
 * Whether batches are packed (no padding) on this backend: the one place the layout is chosen.
 * On wasm and cpu attention is a loop of 2-D products per (sequence, KV head) anyway, so each
 * sequence gets its own length at no cost, and every linear layer multiplies real tokens only.
 * GPU backends (block.ts batchedAttention) keep the padded grid: there attention is one batched product
 * per step over all sequences, which needs equal lengths, and a product per sequence would
 * multiply dispatches (a packed batch of different lengths still runs there, one sequence at a
 * time: block.ts attention).
 */
export function packedLayout(): boolean {
  return layoutOverride ? layoutOverride === "packed" : !batchedAttention();
}

/** Rows a batch of sequences of these lengths takes in the layout (packed: Σ lengths; padded: count × the longest). */
export function layoutTokens(lens: readonly number[], packed = packedLayout()): number {
  return packed ? lens.reduce((a, l) => a + l, 0) : lens.length * Math.max(0, ...lens);
}

/**
 * The padded batch, seqs × T, whose memory bounds a batch of these lengths in the layout: the
 * same one when padded; packed, T the longest and seqs = ⌈Σ lengths / T⌉ (no fewer rows, and
 * no smaller attention scores: Σ Lᵢ² ≤ T · Σ Lᵢ). The memory plan counts padded batches.
 */
export function paddedEquivalent(lens: readonly number[], packed = packedLayout()): { seqs: number; T: number } {
  const T = Math.max(0, ...lens);
  return { seqs: packed && T > 0 ? Math.ceil(layoutTokens(lens, true) / T) : lens.length, T };
}

/** Plans a batch; `packed` (default: packedLayout()) picks its rows' layout. */
export function planBatch(batch: TokenBatch, nVocab: number, opts: { packed?: boolean } = {}): BatchPlan {
  const B = batch.tokens.length;
  if (B === 0) throw new Error("tokenLogProbs: empty batch");
  if (batch.targetStart.length !== B) throw new Error(`tokenLogProbs: ${B} sequences but ${batch.targetStart.length} targetStart values`);
  const T = Math.max(...batch.tokens.map((s) => s.length));
  if (T < 2) throw new Error("tokenLogProbs: every sequence is shorter than 2 tokens; nothing to score");
  const packed = opts.packed ?? packedLayout();
  const lens = packed ? batch.tokens.map((s) => s.length) : new Array<number>(B).fill(T);
  const offsets: number[] = [];
  let rows = 0;
  for (const len of lens) {
    offsets.push(rows);
    rows += len;
  }
  const ids = new Int32Array(rows);
  const mask = new Float32Array(B * T);
  const spans: Span[] = [];
  const targets: number[] = [];
  for (let b = 0; b < B; b++) {
    const seq = batch.tokens[b];
    for (let t = 0; t < seq.length; t++) {
      const id = seq[t];
      if (!Number.isInteger(id) || id < 0 || id >= nVocab)
        throw new Error(`tokenLogProbs: token id ${id} at [${b}][${t}] is outside the vocabulary (0..${nVocab - 1})`);
      ids[offsets[b] + t] = id;
    }
    const start = Math.max(1, batch.targetStart[b]);
    spans.push({ b, start, end: Math.max(start, seq.length) });
    for (let t = start; t < seq.length; t++) {
      mask[b * T + t] = 1;
      targets.push(seq[t]);
    }
  }
  return { grid: { ids, B, T, offsets, lens, rows, packed }, spans, targets: Int32Array.from(targets), mask };
}

/** The rows of x [rows, D] that predict the scored tokens (row offsets[b] + t − 1 predicts token t), [n, D]. */
export function scoredRows(x: tf.Tensor2D, plan: BatchPlan): tf.Tensor2D {
  const D = x.shape[1];
  const { offsets } = plan.grid;
  const parts = plan.spans.filter((s) => s.end > s.start).map((s) => tf.slice(x, [offsets[s.b] + s.start - 1, 0], [s.end - s.start, D]));
  return parts.length === 1 ? parts[0] : tf.concat<tf.Tensor2D>(parts);
}

/**
 * The inverse of scoredRows: per-span rows [n, D] (spans in order) put back on the rows that
 * predict their tokens, [rows, D] with zeros elsewhere. Slice/pad/concat only.
 */
export function onRows(values: tf.Tensor2D, plan: BatchPlan): tf.Tensor2D {
  const D = values.shape[1];
  const { lens } = plan.grid;
  // planBatch makes one span per sequence, in row order.
  const parts: tf.Tensor2D[] = [];
  let off = 0;
  for (const { b, start, end } of plan.spans) {
    const n = end - start;
    if (n === 0) {
      if (lens[b] > 0) parts.push(tf.zeros([lens[b], D], values.dtype));
      continue;
    }
    const part = tf.slice(values, [off, 0], [n, D]);
    off += n;
    parts.push(
      tf.pad(part, [
        [start - 1, lens[b] - end + 1],
        [0, 0],
      ]),
    );
  }
  return parts.length === 1 ? parts[0] : tf.concat<tf.Tensor2D>(parts);
}

/**
 * Lays per-span values [n, ...inner] (spans concatenated in order) out as [B, T, ...inner]
 * with zeros elsewhere; `shift` 1 puts each value on the row that predicts its token (the
 * inverse of scoredRows). Slice/pad/concat only (the wasm backend has no UnsortedSegmentSum).
 */
export function layOut<R extends tf.Tensor>(values: tf.Tensor, plan: BatchPlan, inner: number[], shift = 0): R {
  const T = plan.grid.T;
  const rowsOut: tf.Tensor[] = [];
  let off = 0;
  for (const { start, end } of plan.spans) {
    const n = end - start;
    if (n === 0) {
      rowsOut.push(tf.zeros([T, ...inner], values.dtype));
      continue;
    }
    const part = tf.slice(values, [off, ...inner.map(() => 0)], [n, ...inner]);
    off += n;
    rowsOut.push(tf.pad(part, [[start - shift, T - end + shift], ...inner.map((): [number, number] => [0, 0])]));
  }
  return tf.stack(rowsOut) as R;
}

/** The final norm (and, when emulating llama.cpp, its rounding) of hidden rows [n, D]. */
export function finalNorm(model: BaseModel, rows: tf.Tensor2D): tf.Tensor2D {
  const h = rmsNorm(rows, model.weights.outputNorm, model.config.rmsEps);
  return model.activationRounding === "llama.cpp-cpu" ? roundActivations(h, model.weights.outputType) : h;
}

/**
 * Runs the body on a planned batch and the head on its scored rows. The head result's
 * tensors belong to the caller.
 */
export function scorePlan(
  model: BaseModel,
  lora: LoraParams | null,
  plan: BatchPlan,
  req: { ids?: Int32Array; topK?: number; tick?: (tokenBlocks: number) => void } = {},
): HeadResult {
  const ctx = seqContext(model, plan.grid, req.tick);
  let final: tf.Tensor2D;
  try {
    final = runBody(model, lora, plan.grid, ctx, false).final;
  } finally {
    ctx.dispose();
  }
  const h = tf.tidy(() => finalNorm(model, scoredRows(final, plan)));
  final.dispose();
  try {
    return headForward(model.weights, { h, ids: req.ids ?? plan.targets, topK: req.topK });
  } finally {
    h.dispose();
  }
}

/**
 * Log-probs of the batch's tokens, laid out [B, T]. Returned tensors belong to the caller
 * (dispose them, or call inside tf.tidy); no other tensors are left behind.
 */
export function tokenLogProbs(model: BaseModel, lora: LoraParams | null, batch: TokenBatch, opts: TokenLogProbsOptions = {}): TokenLogProbs {
  const { nVocab } = model.config;
  const plan = planBatch(batch, nVocab);
  const { B, T } = plan.grid;
  const k = opts.topK ?? 0;
  if (!Number.isInteger(k) || k < 0 || k > nVocab) throw new Error(`tokenLogProbs: topK must be an integer in 0..${nVocab}, got ${opts.topK}`);
  const mask = tf.tensor2d(plan.mask, [B, T]);
  if (plan.targets.length === 0) {
    const res: TokenLogProbs = { logprobs: tf.zeros([B, T]), mask };
    if (k > 0) res.topK = { ids: tf.zeros([B, T, k], "int32"), logprobs: tf.zeros([B, T, k]) };
    return res;
  }
  const head = scorePlan(model, lora, plan, { topK: k });
  try {
    return tf.tidy(() => {
      const res: TokenLogProbs = { logprobs: layOut<tf.Tensor2D>(tf.reshape(head.logprobs!, [-1]), plan, []), mask };
      if (head.top) res.topK = { ids: layOut<tf.Tensor3D>(head.top.ids, plan, [k]), logprobs: layOut<tf.Tensor3D>(head.top.logprobs, plan, [k]) };
      return res as unknown as tf.TensorContainer;
    }) as unknown as TokenLogProbs;
  } finally {
    tf.dispose([head.lse, head.logprobs!, ...(head.top ? [head.top.ids, head.top.logprobs] : [])]);
  }
}

/** Full logits h·Wᵀ for hidden rows h [N, nEmbd] → [N, nVocab] (small vocabularies: tests). */
export function outputLogits(model: BaseModel, h: tf.Tensor2D): tf.Tensor2D {
  const parts: tf.Tensor2D[] = [];
  for (let c = 0; c < model.weights.numHeadChunks; c++) {
    const { w } = model.weights.headChunk(c);
    parts.push(linearNoGrad(h, w));
    model.weights.releaseHeadChunk(w);
  }
  return parts.length === 1 ? parts[0] : tf.concat<tf.Tensor2D>(parts, 1);
}
