/**
 * Per-token log-probabilities of given tokens under the model (optionally with LoRA):
 * log p(tokens[b][t] | tokens[b][<t]) for t in [targetStart[b], len_b).
 *
 * The vocabulary projection and log-softmax run over chunks of positions inside a custom
 * gradient that recomputes the chunk's logits in the backward pass, so neither the forward
 * nor the gradient ever holds more than one chunk's [rows, n_vocab] logits: long sequences
 * and large vocabularies do not blow up memory.
 */
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "./base-model.js";
import { mmFrozenT } from "./fast-matmul.js";
import { hiddenStates } from "./forward.js";

export interface TokenBatch {
  /** One token-id list per sequence (lengths may differ; right-padded internally). */
  tokens: number[][];
  /** First position scored in each sequence (≥ 1: position 0 has no context). */
  targetStart: number[];
}

export interface TokenLogProbsOptions {
  /** Also return the top-k next-token log-probs at each scored position (no gradient). */
  topK?: number;
  /** Max logits held at once, in floats (rows × n_vocab); default 4M (16 MB). */
  chunkFloats?: number;
}

export interface TokenLogProbs {
  /** [B, Tmax]: log p of each scored token, 0 where not scored. */
  logprobs: tf.Tensor2D;
  /** [B, Tmax]: 1 where scored, else 0. */
  mask: tf.Tensor2D;
  /** [B, Tmax, k]: top-k ids (int32) and log-probs of the distribution predicting token t; 0 where not scored. */
  topK?: { ids: tf.Tensor3D; logprobs: tf.Tensor3D };
}

/** Logits h·Wᵀ for W [V, D] as (W·hᵀ)ᵀ: plain products only (transposed matMul is slow on wasm). */
function logitsOf(h: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  return tf.transpose(tf.matMul(w, tf.transpose(h))) as tf.Tensor2D;
}

/** log softmax(h·Wᵀ)[y] for rows h [N, D], targets y, projection W [V, D]; custom grad w.r.t. h. */
function targetLogProbsChunk(h: tf.Tensor2D, targetIds: number[], w: tf.Tensor2D): tf.Tensor1D {
  const V = w.shape[0];
  const N = targetIds.length;
  // Index of (row i, target y_i) in the flattened [N, V] logits.
  const flatIdx = tf.tensor1d(targetIds.map((y, i) => i * V + y), "int32");
  const f = tf.customGrad((hIn: tf.Tensor | tf.GradSaveFunc, save: tf.Tensor | tf.GradSaveFunc) => {
    const hx = hIn as tf.Tensor2D;
    (save as tf.GradSaveFunc)([hx]);
    const value = tf.tidy(() => {
      const logits = logitsOf(hx, w);
      const lse = tf.logSumExp(logits, 1);
      const picked = tf.gather(tf.reshape(logits, [N * V]), flatIdx);
      return tf.sub(picked, lse) as tf.Tensor1D;
    });
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]) =>
      tf.tidy(() => {
        const hs = saved[0] as tf.Tensor2D;
        const logits = logitsOf(hs, w);
        const p = tf.softmax(logits);
        // d/dlogits of log softmax[y] = onehot(y) − p, scaled by the upstream gradient.
        // Tensors made outside gradFunc may be gone by now (the forward's tidy has ended), so
        // the targets come from the JS array.
        // (int32 one-hot then cast: the wasm backend's OneHot returns zeros when asked for float32.)
        const onehot = tf.cast(tf.oneHot(tf.tensor1d(targetIds, "int32"), V), "float32");
        const g = tf.mul(tf.sub(onehot, p), tf.reshape(dy, [-1, 1]));
        return tf.matMul(g, w);
      });
    return { value, gradFunc };
  });
  return f(h) as tf.Tensor1D;
}

function topKChunk(h: tf.Tensor2D, w: tf.Tensor2D, k: number): { ids: tf.Tensor2D; logprobs: tf.Tensor2D } {
  return tf.tidy(() => {
    const logits = logitsOf(h, w);
    const lse = tf.logSumExp(logits, 1, true);
    const { values, indices } = tf.topk(logits, k);
    return { ids: indices as tf.Tensor2D, logprobs: tf.sub(values, lse) as tf.Tensor2D };
  });
}

/** One sequence's scored span: positions [start, end) of row b, predicted from rows start−1.. . */
interface Span {
  b: number;
  start: number;
  end: number;
}

/** Validates the batch; returns padded ids, the mask, each sequence's scored span and targets. */
function planBatch(batch: TokenBatch, nVocab: number) {
  const B = batch.tokens.length;
  if (B === 0) throw new Error("tokenLogProbs: empty batch");
  if (batch.targetStart.length !== B) throw new Error(`tokenLogProbs: ${B} sequences but ${batch.targetStart.length} targetStart values`);
  const T = Math.max(...batch.tokens.map((s) => s.length));
  if (T < 2) throw new Error("tokenLogProbs: every sequence is shorter than 2 tokens; nothing to score");
  const ids = new Int32Array(B * T);
  const maskArr = new Float32Array(B * T);
  const spans: Span[] = [];
  const targets: number[] = [];
  for (let b = 0; b < B; b++) {
    const seq = batch.tokens[b];
    for (let t = 0; t < seq.length; t++) {
      const id = seq[t];
      if (!Number.isInteger(id) || id < 0 || id >= nVocab) throw new Error(`tokenLogProbs: token id ${id} at [${b}][${t}] is outside the vocabulary (0..${nVocab - 1})`);
      ids[b * T + t] = id;
    }
    const start = Math.max(1, batch.targetStart[b]);
    spans.push({ b, start, end: Math.max(start, seq.length) });
    for (let t = start; t < seq.length; t++) {
      maskArr[b * T + t] = 1;
      targets.push(seq[t]);
    }
  }
  return { B, T, ids, maskArr, spans, targets };
}

/**
 * Lays per-span values [n, ...inner] (spans concatenated in order) out as [B, T, ...inner]
 * with zeros elsewhere. Built from slice/pad/concat only: the wasm backend has no
 * UnsortedSegmentSum, which the gradients of gather and scatter need.
 */
function layOut<R extends tf.Tensor>(values: tf.Tensor, spans: Span[], T: number, inner: number[]): R {
  const rowsOut: tf.Tensor[] = [];
  let off = 0;
  for (const { start, end } of spans) {
    const n = end - start;
    if (n === 0) {
      rowsOut.push(tf.zeros([T, ...inner], values.dtype));
      continue;
    }
    const part = tf.slice(values, [off, ...inner.map(() => 0)], [n, ...inner]);
    off += n;
    rowsOut.push(tf.pad(part, [[start, T - end], ...inner.map((): [number, number] => [0, 0])]));
  }
  return tf.stack(rowsOut) as R;
}

/**
 * Log-probs of the batch's tokens. Returned tensors belong to the caller (dispose them, or
 * call inside tf.tidy / tf.variableGrads); no other tensors are left behind.
 */
export function tokenLogProbs(model: BaseModel, lora: LoraParams | null, batch: TokenBatch, opts: TokenLogProbsOptions = {}): TokenLogProbs {
  const { nVocab, nEmbd } = model.config;
  const plan = planBatch(batch, nVocab);
  const { B, T, spans } = plan;
  const k = opts.topK ?? 0;
  if (!Number.isInteger(k) || k < 0 || k > nVocab) throw new Error(`tokenLogProbs: topK must be an integer in 0..${nVocab}, got ${opts.topK}`);
  const chunkRows = Math.max(1, Math.floor((opts.chunkFloats ?? 4 * 1024 * 1024) / nVocab));
  // The tidy returns tensors only; the cast is because TokenLogProbs (an interface) has no index signature.
  return tf.tidy(() => {
    const mask = tf.tensor2d(plan.maskArr, [B, T]);
    const n = plan.targets.length;
    if (n === 0) {
      const res: TokenLogProbs = { logprobs: tf.zeros([B, T]), mask };
      if (k > 0) res.topK = { ids: tf.zeros([B, T, k], "int32"), logprobs: tf.zeros([B, T, k]) };
      return res as unknown as tf.TensorContainer;
    }
    const hidden = hiddenStates(model, lora, tf.tensor2d(plan.ids, [B, T], "int32"));
    // Rows that predict scored tokens: row b*T + t − 1 predicts token t.
    const parts = spans.filter((s) => s.end > s.start).map((s) => tf.slice(hidden, [s.b * T + s.start - 1, 0], [s.end - s.start, nEmbd]));
    const rows = parts.length === 1 ? parts[0] : tf.concat(parts);
    const picked: tf.Tensor1D[] = [];
    const topIds: tf.Tensor2D[] = [];
    const topLp: tf.Tensor2D[] = [];
    for (let s = 0; s < n; s += chunkRows) {
      const len = Math.min(chunkRows, n - s);
      const h = tf.slice(rows, [s, 0], [len, nEmbd]);
      picked.push(targetLogProbsChunk(h, plan.targets.slice(s, s + len), model.weights.output));
      if (k > 0) {
        const tk = topKChunk(h, model.weights.output, k);
        topIds.push(tk.ids);
        topLp.push(tk.logprobs);
      }
    }
    const values = picked.length === 1 ? picked[0] : tf.concat(picked);
    const res: TokenLogProbs = { logprobs: layOut<tf.Tensor2D>(values, spans, T, []), mask };
    if (k > 0) {
      res.topK = {
        ids: layOut<tf.Tensor3D>(tf.concat(topIds), spans, T, [k]),
        logprobs: layOut<tf.Tensor3D>(tf.concat(topLp), spans, T, [k]),
      };
    }
    return res as unknown as tf.TensorContainer;
  }) as unknown as TokenLogProbs;
}

/** Logits h·Wout for hidden rows h [N, nEmbd] → [N, nVocab], with a fast gradient w.r.t. h. */
export function outputLogits(model: BaseModel, h: tf.Tensor2D): tf.Tensor2D {
  return mmFrozenT(h, model.weights.output);
}
