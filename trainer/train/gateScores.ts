/**
 * What the publish gate asks of a candidate adapter (worker.ts `evaluate`): the mean KL between
 * its next-token distributions and the serving adapter's, and the mean per-token log-prob of
 * given answers. Batched over sequences, the vocabulary one slice at a time (head.ts), read
 * back once per batch.
 */
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "../model/base-model.js";
import { runBody, seqContext } from "../model/forward.js";
import { headForward } from "../model/head.js";
import { finalNorm, planBatch, scorePlan, scoredRows, type BatchPlan } from "../model/logprobs.js";
import { readBack } from "./readBack.js";

export interface ScoredSeq {
  tokens: number[];
  /** First scored position (≥ 1). */
  start: number;
}

/** Tokens per forward batch by default: bounds the activations one gate batch holds. */
const BATCH_TOKENS = 4096;

function batches(seqs: ScoredSeq[], budget: number): ScoredSeq[][] {
  const out: ScoredSeq[][] = [];
  let cur: ScoredSeq[] = [];
  let maxLen = 0;
  for (const s of seqs) {
    const len = Math.max(maxLen, s.tokens.length);
    if (cur.length > 0 && len * (cur.length + 1) > budget) {
      out.push(cur);
      cur = [];
      maxLen = 0;
    }
    cur.push(s);
    maxLen = Math.max(maxLen, s.tokens.length);
  }
  if (cur.length) out.push(cur);
  return out;
}

function plan(model: BaseModel, seqs: ScoredSeq[]): BatchPlan {
  return planBatch({ tokens: seqs.map((s) => s.tokens), targetStart: seqs.map((s) => s.start) }, model.config.nVocab);
}

/** Final-normed scored rows of a planned batch under `lora`, [n, nEmbd]. */
function scoredHidden(model: BaseModel, lora: LoraParams | null, p: BatchPlan): tf.Tensor2D {
  const ctx = seqContext(model, p.grid.B, p.grid.T);
  try {
    const { final } = runBody(model, lora, p.grid, ctx, false);
    const h = tf.tidy(() => finalNorm(model, scoredRows(final, p)));
    final.dispose();
    return h;
  } finally {
    ctx.dispose();
  }
}

/** Mean KL(p_cand ‖ p_serv) over the positions that predict each sequence's scored tokens. */
export async function meanKl(model: BaseModel, cand: LoraParams, serving: LoraParams | null, seqs: ScoredSeq[], batchTokens = BATCH_TOKENS): Promise<{ kl: number | null; positions: number }> {
  let sum = 0;
  let n = 0;
  for (const group of batches(seqs, batchTokens)) {
    const p = plan(model, group);
    if (p.targets.length === 0) continue;
    const hc = scoredHidden(model, cand, p);
    const hs = scoredHidden(model, serving, p);
    const head = headForward(model.weights, { h: hc, klAgainst: hs });
    const total = tf.sum(head.kl!);
    const [v] = await readBack([total]);
    tf.dispose([hc, hs, head.lse, head.kl!, total]);
    sum += v[0];
    n += p.targets.length;
  }
  return { kl: n > 0 ? sum / n : null, positions: n };
}

/** Mean per-token log-prob of the scored tokens, pooled over the sequences. */
export async function meanLogProb(model: BaseModel, lora: LoraParams | null, seqs: ScoredSeq[], batchTokens = BATCH_TOKENS): Promise<number | null> {
  let sum = 0;
  let n = 0;
  for (const group of batches(seqs, batchTokens)) {
    const p = plan(model, group);
    if (p.targets.length === 0) continue;
    const head = scorePlan(model, lora, p);
    const total = tf.sum(head.logprobs!);
    const [v] = await readBack([total]);
    tf.dispose([head.lse, head.logprobs!, total]);
    sum += v[0];
    n += p.targets.length;
  }
  return n > 0 ? sum / n : null;
}
