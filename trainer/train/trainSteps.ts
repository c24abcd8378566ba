import * as tf from "@tensorflow/tfjs-core";
import "../loss/gradients.js";
import { advantagesFor, type CombinedWeights, type Method } from "../loss/advantages.js";
import { ppoClipLoss, type PpoOptions } from "../loss/ppo.js";
import { selectHint, TOPK_DEFAULT_K, topkOpdLoss } from "../loss/topk.js";
import type { LoraParams } from "../lora/params.js";
import type { BaseModel } from "../model/base-model.js";
import { tokenLogProbs } from "../model/logprobs.js";
import type { AdamW } from "../optim/adamw.js";
import { candidateLogProbs } from "./candidates.js";
import type { PreparedSample } from "./tokenize.js";

export interface TrainOptions {
  method: Method;
  /** Number of optimizer steps to run now. */
  steps: number;
  /** Samples per step (cycled through the eligible samples). Default 8. */
  batchSize?: number;
  /** Learning rate (default: the optimizer's). */
  lr?: number;
  ppo?: PpoOptions;
  weights?: CombinedWeights;
  /** Who scores the hinted prompt for OPD: the current policy (default) or the frozen base. */
  teacher?: "current" | "base";
  /** k of top-k select. Default 4. */
  topK?: number;
}

/** What one step did; the CLI prints it and metrics.json keeps it. */
export interface StepMetrics {
  /** Optimizer step number after this update (1-based, continues across resumes). */
  step: number;
  loss: number;
  clipFraction: number;
  /** k3 KL to the frozen base (0 unless ppo.klBeta > 0). */
  kl: number;
  gradNorm: number;
  clipped: boolean;
  samples: number;
  /** Response tokens trained. */
  trainedTokens: number;
  /** Prompt + response tokens through the forward and backward pass. */
  tokens: number;
  /** tokens / seconds, the whole step (lp_old and teacher passes included). */
  tokensPerSecond: number;
  seconds: number;
  /** Mean |A_t| over trained tokens: how strong the signal was. */
  meanAbsAdvantage: number;
}

export interface TrainState {
  model: BaseModel;
  lora: LoraParams;
  optimizer: AdamW;
}

/** The LoRA variables by their adapter tensor names (`blk.N.<name>.weight.lora_a|b`). */
export function loraParamRecord(lora: LoraParams): Record<string, tf.Variable> {
  const out: Record<string, tf.Variable> = {};
  for (const [key, p] of lora.pairs) {
    out[`${key}.lora_a`] = p.a;
    out[`${key}.lora_b`] = p.b;
  }
  return out;
}

/** Whether a sample carries a training signal for this method (method.md's masking rules). */
export function isEligible(method: Method, s: PreparedSample): boolean {
  const rl = s.reward === 1 || s.reward === -1;
  const hint = s.teachers.length > 0;
  switch (method) {
    case "binary":
      return rl;
    case "opd":
      return hint;
    case "combined":
    case "topk":
      return rl || hint;
  }
}

/** Response part of row b of a [B, T] (or [B, T, K]) array. */
function responseSlice<T>(row: T[], s: { tokens: number[]; promptLength: number }): T[] {
  return row.slice(s.promptLength, s.tokens.length);
}

function tensorFromRows(rows: number[][], T: number, fill: (b: number, t: number) => number): tf.Tensor2D {
  const data = new Float32Array(rows.length * T);
  for (let b = 0; b < rows.length; b++) for (let t = 0; t < T; t++) data[b * T + t] = fill(b, t);
  return tf.tensor2d(data, [rows.length, T]);
}

/**
 * Runs `opts.steps` updates of the LoRA in `state` on the eligible samples. Each step:
 * lp_old by a forward pass with the current adapter (on-policy; served log-probs instead when
 * a sample has them), teacher log-probs for hinted samples, advantages, then one AdamW update
 * of the PPO-clip loss. No process globals: the CLI and the trainer worker both call this.
 * Leaves no tensors behind (the tensor count is the same after every step).
 */
export async function trainSteps(
  state: TrainState,
  samples: readonly PreparedSample[],
  opts: TrainOptions,
  hooks: { onStep?: (m: StepMetrics) => void; signal?: AbortSignal } = {},
): Promise<StepMetrics[]> {
  const pool = samples.filter((s) => isEligible(opts.method, s));
  if (pool.length === 0) {
    throw new Error(`no sample carries a ${opts.method} training signal (${opts.method === "binary" ? "reward ±1" : opts.method === "opd" ? "a hint" : "a hint or reward ±1"})`);
  }
  const batchSize = Math.min(opts.batchSize ?? 8, pool.length);
  const params = loraParamRecord(state.lora);
  const byVarName = new Map(Object.entries(params).map(([k, v]) => [v.name, k]));
  const vars = Object.values(params);
  const out: StepMetrics[] = [];
  for (let i = 0; i < opts.steps; i++) {
    if (hooks.signal?.aborted) break;
    const t0 = performance.now();
    const first = state.optimizer.step * batchSize;
    const batchSamples = Array.from({ length: batchSize }, (_, j) => pool[(first + j) % pool.length]);
    const m = step(state, batchSamples, opts, vars, byVarName);
    const seconds = (performance.now() - t0) / 1000;
    const metrics: StepMetrics = { ...m, seconds, tokensPerSecond: m.tokens / Math.max(seconds, 1e-9) };
    out.push(metrics);
    hooks.onStep?.(metrics);
    // Let IPC messages and signals through between steps.
    await new Promise((r) => setImmediate(r));
  }
  return out;
}

type StepCore = Omit<StepMetrics, "seconds" | "tokensPerSecond">;

function step(state: TrainState, batchSamples: PreparedSample[], opts: TrainOptions, vars: tf.Variable[], byVarName: Map<string, string>): StepCore {
  const { model, lora, optimizer } = state;
  const method = opts.method;
  const k = opts.topK ?? TOPK_DEFAULT_K;
  const B = batchSamples.length;
  const T = Math.max(...batchSamples.map((s) => s.tokens.length));
  const batch = { tokens: batchSamples.map((s) => s.tokens), targetStart: batchSamples.map((s) => s.promptLength) };
  const teacherLora = opts.teacher === "base" ? null : lora;

  // 1. lp_old with the current adapter (and, for top-k, the student's top-k ids), no gradient.
  //    Skipped when every sample brings the log-probs it was served with (and top-k is off).
  const needOld = method === "topk" || batchSamples.some((s) => !s.servedLogprobs);
  const old = needOld
    ? tf.tidy(() => {
        const r = tokenLogProbs(model, lora, batch, method === "topk" ? { topK: k } : {});
        return {
          lp: r.logprobs.arraySync(),
          topIds: r.topK ? (r.topK.ids.arraySync() as number[][][]) : undefined,
          topLp: r.topK ? (r.topK.logprobs.arraySync() as number[][][]) : undefined,
        };
      })
    : { lp: [] as number[][], topIds: undefined, topLp: undefined };
  const oldResp = batchSamples.map((s, b) => s.servedLogprobs ?? responseSlice(old.lp[b], s));

  // 2. Teacher log-probs on the hint-augmented prompt, scoring the same response tokens.
  const teacherResp: Array<number[] | undefined> = new Array(B).fill(undefined);
  const topkTeacher: Array<{ ids: number[][]; lp: number[][] } | undefined> = new Array(B).fill(undefined);
  const hinted = batchSamples.map((s, b) => (s.teachers.length > 0 ? b : -1)).filter((b) => b >= 0);
  if (hinted.length > 0 && method !== "binary") {
    if (method !== "topk") {
      const tb = hinted.map((b) => batchSamples[b].teachers[0]);
      const lp = tf.tidy(() => tokenLogProbs(model, teacherLora, { tokens: tb.map((t) => t.tokens), targetStart: tb.map((t) => t.promptLength) }).logprobs.arraySync());
      hinted.forEach((b, i) => (teacherResp[b] = responseSlice(lp[i], tb[i])));
    } else {
      for (const b of hinted) {
        const s = batchSamples[b];
        const studentIds = responseSlice(old.topIds![b], s);
        const cands = s.teachers;
        let chosen = 0;
        if (cands.length > 1) {
          const candIds = tf.tidy(() =>
            tokenLogProbs(model, teacherLora, { tokens: cands.map((c) => c.tokens), targetStart: cands.map((c) => c.promptLength) }, { topK: k }).topK!.ids.arraySync() as number[][][],
          );
          chosen = selectHint(studentIds, cands.map((c, ci) => responseSlice(candIds[ci], c)));
        }
        const c = cands[chosen];
        // The teacher's log-probs at the student's top-k ids, placed at the teacher's positions.
        const ids: number[][][] = [new Array(c.tokens.length).fill(null)];
        studentIds.forEach((row, j) => (ids[0][c.promptLength + j] = row));
        const lp = tf.tidy(() => (candidateLogProbs(model, teacherLora, { tokens: [c.tokens], targetStart: [c.promptLength] }, ids, k).arraySync() as number[][][])[0]);
        topkTeacher[b] = { ids: studentIds, lp: responseSlice(lp, c) };
      }
    }
  }

  // 3. Advantages per response token, laid out as [B, T] like tokenLogProbs' output.
  const adv: number[][] = batchSamples.map(() => new Array<number>(T).fill(0));
  const rlMask: number[][] = batchSamples.map(() => new Array<number>(T).fill(0));
  let absSum = 0;
  let trained = 0;
  batchSamples.forEach((s, b) => {
    const a = advantagesFor(method, { reward: s.reward, teacherLp: teacherResp[b], oldLp: oldResp[b] }, opts.weights);
    if (!a) return;
    a.forEach((v, j) => {
      adv[b][s.promptLength + j] = v;
      rlMask[b][s.promptLength + j] = 1;
      absSum += Math.abs(v);
      trained++;
    });
  });
  const oldRow = (b: number, t: number) => {
    const s = batchSamples[b];
    return t >= s.promptLength && t < s.tokens.length ? oldResp[b][t - s.promptLength] : 0;
  };
  const needRef = (opts.ppo?.klBeta ?? 0) > 0;
  const ref = needRef ? tf.tidy(() => tokenLogProbs(model, null, batch).logprobs) : undefined;
  const advT = tensorFromRows(adv, T, (b, t) => adv[b][t]);
  const maskT = tensorFromRows(rlMask, T, (b, t) => rlMask[b][t]);
  const oldT = tensorFromRows(adv, T, oldRow);

  // Top-k OPD inputs: [B, T, K] at the student's top-k ids.
  let topk: { ids: number[][][]; old: tf.Tensor3D; teacher: tf.Tensor3D; mask: tf.Tensor2D } | undefined;
  if (method === "topk" && topkTeacher.some(Boolean)) {
    const ids: number[][][] = batchSamples.map(() => []);
    const oldK = new Float32Array(B * T * k);
    const tK = new Float32Array(B * T * k);
    const mK = new Float32Array(B * T);
    batchSamples.forEach((s, b) => {
      for (let t = s.promptLength; t < s.tokens.length; t++) ids[b][t] = old.topIds![b][t];
      const tt = topkTeacher[b];
      if (!tt) return;
      for (let j = 0; j < tt.lp.length; j++) {
        const t = s.promptLength + j;
        mK[b * T + t] = 1;
        for (let v = 0; v < k; v++) {
          oldK[(b * T + t) * k + v] = old.topLp![b][t][v];
          tK[(b * T + t) * k + v] = tt.lp[j][v];
        }
      }
      if (!rlMask[b].some(Boolean)) trained += tt.lp.length;
    });
    topk = { ids, old: tf.tensor3d(oldK, [B, T, k]), teacher: tf.tensor3d(tK, [B, T, k]), mask: tf.tensor2d(mK, [B, T]) };
  }

  // 4. Loss and gradients (only tokenLogProbs/candidateLogProbs inside are taped).
  let clipFraction = 0;
  let kl = 0;
  const { value, grads } = tf.variableGrads(() => {
    let loss: tf.Scalar = tf.scalar(0);
    if (rlMask.some((r) => r.some(Boolean)) || needRef) {
      const lp = tokenLogProbs(model, lora, batch).logprobs;
      const r = ppoClipLoss({ logprobs: lp, oldLogprobs: oldT, advantages: advT, mask: maskT, ...(ref ? { refLogprobs: ref } : {}) }, opts.ppo);
      clipFraction = r.clipFraction.dataSync()[0];
      kl = r.kl.dataSync()[0];
      loss = tf.add(loss, r.loss); // w_rl is inside the advantages
    }
    if (topk) {
      const lpK = candidateLogProbs(model, lora, batch, topk.ids, k);
      const lOpd = topkOpdLoss({ logprobs: lpK, oldLogprobs: topk.old, teacherLogprobs: topk.teacher, mask: topk.mask }, opts.ppo);
      loss = tf.add(loss, tf.mul(tf.scalar(opts.weights?.wOpd ?? 1), lOpd));
    }
    return loss;
  }, vars);
  const lossValue = value.dataSync()[0];
  const named: Record<string, tf.Tensor> = {};
  for (const [varName, g] of Object.entries(grads)) named[byVarName.get(varName) ?? varName] = g;
  // A variable that the loss does not reach (e.g. no trained token) gets a zero gradient.
  for (const [varName, key] of byVarName) if (!named[key]) named[key] = tf.zerosLike(vars.find((v) => v.name === varName)!);
  const info = optimizer.applyGradients(named, opts.lr);
  tf.dispose([value, ...Object.values(named), advT, maskT, oldT, ...(ref ? [ref] : []), ...(topk ? [topk.old, topk.teacher, topk.mask] : [])]);

  return {
    step: optimizer.step,
    loss: lossValue,
    clipFraction,
    kl,
    gradNorm: info.gradNorm,
    clipped: info.clipped,
    samples: B,
    trainedTokens: trained,
    tokens: batchSamples.reduce((n, s) => n + s.tokens.length, 0),
    meanAbsAdvantage: trained > 0 ? absSum / trained : 0,
  };
}
