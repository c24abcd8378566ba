import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "../model/base-model.js";
import { hiddenStates } from "../model/forward.js";
import { outputLogits } from "../model/logprobs.js";

/**
 * log p(v | tokens[<t]) for given candidate ids v at scored positions (top-k select needs the
 * teacher's and the current policy's log-probs at the *student's* top-k ids, which
 * tokenLogProbs does not give). `ids[b][t]` lists K ids for position t of sequence b, for
 * t in [targetStart[b], len_b); other positions are ignored. Returns [B, Tmax, K] with 0 where
 * not scored. Differentiable w.r.t. the LoRA variables. It holds [positions, n_vocab] logits
 * for the backward pass (no chunked recomputation as in tokenLogProbs): fine for the short
 * responses top-k select trains on, not for 100k-vocabulary models on long sequences.
 */
export function candidateLogProbs(
  model: BaseModel,
  lora: LoraParams | null,
  batch: { tokens: number[][]; targetStart: number[] },
  ids: number[][][],
  k: number,
): tf.Tensor3D {
  const B = batch.tokens.length;
  const T = Math.max(...batch.tokens.map((s) => s.length));
  const V = model.config.nVocab;
  const D = model.config.nEmbd;
  const padded = new Int32Array(B * T);
  const spans: Array<{ b: number; start: number; end: number }> = [];
  const flat: number[] = [];
  for (let b = 0; b < B; b++) {
    const seq = batch.tokens[b];
    seq.forEach((id, t) => (padded[b * T + t] = id));
    const start = Math.max(1, batch.targetStart[b]);
    spans.push({ b, start, end: Math.max(start, seq.length) });
    for (let t = start; t < seq.length; t++) {
      const cand = ids[b]?.[t];
      if (!cand || cand.length !== k) throw new Error(`candidateLogProbs: position [${b}][${t}] needs ${k} candidate ids`);
      for (const v of cand) {
        if (!Number.isInteger(v) || v < 0 || v >= V) throw new Error(`candidateLogProbs: id ${v} outside the vocabulary`);
        flat.push(v);
      }
    }
  }
  // Only slice/pad/concat/mul on the differentiable path: the wasm backend lacks
  // UnsortedSegmentSum, which the gradient of gather needs.
  return tf.tidy(() => {
    if (flat.length === 0) return tf.zeros([B, T, k]) as tf.Tensor3D;
    const hidden = hiddenStates(model, lora, tf.tensor2d(padded, [B, T], "int32"));
    const parts = spans.filter((s) => s.end > s.start).map((s) => tf.slice(hidden, [s.b * T + s.start - 1, 0], [s.end - s.start, D]));
    const h = parts.length === 1 ? parts[0] : tf.concat(parts);
    const N = h.shape[0];
    const logits = outputLogits(model, h);
    const logp = tf.sub(logits, tf.logSumExp(logits, 1, true));
    const oneHot = tf.reshape(tf.oneHot(tf.tensor1d(flat, "int32"), V), [N, k, V]);
    const picked = tf.sum(tf.mul(tf.expandDims(logp, 1), oneHot), 2);
    let off = 0;
    const rowsOut = spans.map(({ start, end }) => {
      const n = end - start;
      if (n === 0) return tf.zeros([T, k]);
      const part = tf.slice(picked, [off, 0], [n, k]);
      off += n;
      return tf.pad(part, [[start, T - end], [0, 0]]);
    });
    return tf.stack(rowsOut) as tf.Tensor3D;
  });
}
