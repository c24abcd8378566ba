import * as tf from "@tensorflow/tfjs-core";
import "../loss/gradients.js";
import { advantagesFor, type CombinedWeights, type Method } from "../loss/advantages.js";
import { ppoClipLoss, type PpoOptions } from "../loss/ppo.js";
import { selectHint, TOPK_DEFAULT_K, topkOpdLoss } from "../loss/topk.js";
import type { LoraParams } from "../lora/params.js";
import { backwardBody } from "../model/backward.js";
import type { BaseModel } from "../model/base-model.js";
import { disposeBody, keptBlocksFor, runBody, seqContext, type BodyResult } from "../model/forward.js";
import { headForward, headGradient, type HeadResult } from "../model/head.js";
import { finalNorm, layoutTokens, paddedEquivalent, planBatch, scorePlan, scoredRows, type BatchPlan } from "../model/logprobs.js";
import type { AdamW } from "../optim/adamw.js";
import { readBack } from "./readBack.js";
import type { PreparedSample } from "./tokenize.js";
import { WorkMeter } from "./workMeter.js";
import { BASE, seqKey, type PassCache } from "./passCache.js";
// A cycle: gateScores.ts (the gate) imports microBatches from here, the anchor its scoredHidden (both used in functions only).
import { scoredHidden } from "./gateScores.js";

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
  /**
   * Most tokens one forward/backward holds (rows in planBatch's layout: real tokens when packed,
   * sequences × the longest when padded): a step's batch is split
   * into micro-batches whose gradients add up to the whole batch's (the memory plan sets it).
   * Default: no split.
   */
  microBatchTokens?: number;
  /**
   * Blocks (the last ones) whose forward activations a step keeps for the backward instead of
   * running the block again (gradient checkpointing only for the rest): a count, or the memory
   * plan's count for a micro-batch of `seqs` sequences × `T` padded tokens (loadForTraining's
   * keptBlocksAt). 0 (default): every block is recomputed.
   */
  keptBlocks?: number | ((seqs: number, T: number) => number);
  /**
   * The warm process's pass cache (passCache.ts): the anchor's base log-probs and the teachers'
   * are computed once and reused by later steps and runs, and the first step keeps the scored
   * rows of the run-start adapter (and the anchor pass the base model's) for the gate.
   * Absent: every step computes everything.
   */
  cache?: PassCache;
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
  /** tokens / seconds, the whole step (teacher and reference passes included). */
  tokensPerSecond: number;
  seconds: number;
  /** Mean |A_t| over trained tokens: how strong the signal was. */
  meanAbsAdvantage: number;
  /**
   * Blocks whose activations the forward kept (not recomputed in the backward; the fewest over
   * the step's micro-batches); the rest were recomputed.
   */
  keptBlocks?: number;
  /** Token-blocks of anchor and teacher passes the pass cache saved in this step (with a cache). */
  savedTokenBlocks?: number;
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

/** A non-zero reward: ±1, or a weak reward between (the live loop's at-least-one rule); 0 is masked out. */
function hasReward(s: PreparedSample): boolean {
  return s.reward !== undefined && s.reward !== 0 && Number.isFinite(s.reward);
}

/** Whether a sample carries a training signal for this method (method.md's masking rules). */
export function isEligible(method: Method, s: PreparedSample): boolean {
  const rl = hasReward(s);
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

export interface TrainHooks {
  onStep?: (m: StepMetrics) => void;
  /**
   * How far the run is inside a step, in steps (2.4: two steps done, 40% of the third's block
   * passes), at most once a second (`progressEveryMs`): a step at a real size on a CPU takes minutes.
   */
  onProgress?: (stepsDone: number, steps: number) => void;
  progressEveryMs?: number;
  signal?: AbortSignal;
}

/**
 * Runs `opts.steps` updates of the LoRA in `state` on the eligible samples. No process
 * globals: the CLI and the trainer worker both call this. Leaves no tensors behind (the tensor
 * count is the same after every step). Every read from the backend is awaited (GPU backends
 * cannot read synchronously) and batched: a step reads back three times.
 */
export async function trainSteps(state: TrainState, samples: readonly PreparedSample[], opts: TrainOptions, hooks: TrainHooks = {}): Promise<StepMetrics[]> {
  const pool = samples.filter((s) => isEligible(opts.method, s));
  if (pool.length === 0) {
    throw new Error(
      `no sample carries a ${opts.method} training signal (${opts.method === "binary" ? "reward ±1" : opts.method === "opd" ? "a hint" : "a hint or reward ±1"})`,
    );
  }
  const batchSize = Math.min(opts.batchSize ?? 8, pool.length);
  const out: StepMetrics[] = [];
  // The run's first step runs under the adapter the run starts from: its fingerprint names the rows it keeps.
  if (opts.cache && opts.steps > 0) await opts.cache.beginRun(state.lora);
  for (let i = 0; i < opts.steps; i++) {
    if (hooks.signal?.aborted) break;
    const t0 = performance.now();
    const first = state.optimizer.step * batchSize;
    const batchSamples = Array.from({ length: batchSize }, (_, j) => pool[(first + j) % pool.length]);
    const onProgress = hooks.onProgress;
    const meter = onProgress ? new WorkMeter(stepWork(state.model, batchSamples, opts), (f) => onProgress(i + f, opts.steps), hooks.progressEveryMs) : null;
    const m = await step(state, batchSamples, opts, i === 0, meter?.tick);
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

/** Each sample's scored response tokens in the batch's flat order: [offset, offset + length). */
function responseOffsets(samples: readonly PreparedSample[]): number[] {
  const offsets: number[] = [];
  let off = 0;
  for (const s of samples) {
    if (s.promptLength < 1) throw new Error("a training sample needs at least one prompt token before its response");
    offsets.push(off);
    off += s.tokens.length - s.promptLength;
  }
  return offsets;
}

type Tick = (tokenBlocks: number) => void;

/** Log-probs (no gradient) of each sequence's response under `lora`, at its targets or at given ids per row. */
function scoreResponses(
  model: BaseModel,
  lora: LoraParams | null,
  seqs: Array<{ tokens: number[]; promptLength: number }>,
  ids?: Int32Array,
  tick?: Tick,
): tf.Tensor2D {
  const plan = planBatch({ tokens: seqs.map((s) => s.tokens), targetStart: seqs.map((s) => s.promptLength) }, model.config.nVocab);
  const head = scorePlan(model, lora, plan, { ...(ids ? { ids } : {}), tick });
  head.lse.dispose();
  return head.logprobs!;
}

/**
 * Splits a batch (in order) into micro-batches of at most `budget` tokens as planBatch lays them
 * out (packed: real tokens; padded: sequences × the longest); a longer sample goes alone.
 */
export function microBatches<T extends { tokens: readonly number[] }>(samples: readonly T[], budget: number): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  for (const s of samples) {
    if (cur.length > 0 && gridTokens([...cur, s]) > budget) {
      out.push(cur);
      cur = [];
    }
    cur.push(s);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Tokens (rows) of the batch these sequences make in planBatch's layout: real tokens when packed. */
function gridTokens(seqs: ReadonlyArray<{ tokens: readonly number[] }>): number {
  return layoutTokens(seqs.map((s) => s.tokens.length));
}

/**
 * The block passes one step runs, in token-blocks, as groupPass runs them (for its progress):
 * per micro-batch the forward, the teachers' and the anchor's scoring passes, the backward
 * (recompute and gradient: twice a forward).
 */
export function stepWork(model: BaseModel, batchSamples: readonly PreparedSample[], opts: TrainOptions): number {
  let work = 0;

  for (const group of microBatches(batchSamples, opts.microBatchTokens ?? Infinity)) {
    // Forward, backward and (for the blocks not kept) the recompute, per block; summed over blocks below.
    const kept = keptOf(
      model,
      opts,
      group.map((s) => s.tokens.length),
    );
    work += (3 - kept / model.config.nLayer) * gridTokens(group);
    const cache = opts.cache;
    // With a cache, only the passes over what it has not scored yet (the base teacher's and the anchor's share one store).
    const baseScored = new Set<string>();
    const unscored = <S extends { tokens: number[]; promptLength: number }>(seqs: S[], base: boolean): S[] =>
      !cache
        ? seqs
        : seqs.filter((s) => {
            const key = seqKey(s.tokens, s.promptLength);
            if (base ? cache.baseLp.has(key) || baseScored.has(key) : cache.runLp.has(key)) return false;
            if (base) baseScored.add(key);
            return true;
          });
    const hinted = group.filter((s) => s.teachers.length > 0);
    if (hinted.length > 0 && opts.method === "topk") {
      // Each candidate hint scored alone when there are several, then the chosen one (its length taken as the first's).
      for (const s of hinted) work += (s.teachers.length > 1 ? s.teachers.reduce((a, t) => a + t.tokens.length, 0) : 0) + s.teachers[0].tokens.length;
    } else if (hinted.length > 0 && opts.method !== "binary")
      work += gridTokens(
        unscored(
          hinted.map((s) => s.teachers[0]),
          opts.teacher === "base",
        ),
      );
    if ((opts.ppo?.klBeta ?? 0) > 0)
      work += gridTokens(
        unscored(
          group.map((s) => anchorOf(opts.method, s)),
          true,
        ),
      );
  }
  return work * model.config.nLayer;
}

/**
 * Blocks a micro-batch of sequences of these lengths keeps (opts.keptBlocks, bounded by the
 * model's blocks); the memory plan is asked for the padded batch that bounds it (paddedEquivalent).
 */
function keptOf(model: BaseModel, opts: TrainOptions, lens: readonly number[]): number {
  const k = opts.keptBlocks;
  const { seqs, T } = paddedEquivalent(lens);
  return keptBlocksFor(model, typeof k === "function" ? k(seqs, T) : k);
}

/** Which response tokens carry each loss term (decided by the sample, not by the values). */
function signalOf(method: Method, s: PreparedSample): { rl: boolean; topk: boolean } {
  const reward = hasReward(s);
  const hint = s.teachers.length > 0;
  switch (method) {
    case "binary":
      return { rl: reward, topk: false };
    case "opd":
      return { rl: hint, topk: false };
    case "combined":
      return { rl: reward || hint, topk: false };
    case "topk":
      return { rl: reward, topk: hint };
  }
}

/** Loss-term denominators of the whole step, so micro-batch losses add up to its token means. */
interface StepTotals {
  rlTokens: number;
  topkTokens: number;
}

interface GroupResult {
  grads: Map<string, tf.Tensor2D>;
  /** Scalars already weighted by the group's share of the step's tokens. */
  loss: tf.Scalar;
  clipFraction: tf.Scalar;
  kl: tf.Scalar;
  trained: number;
  absSum: number;
  keptBlocks: number;
}

async function step(state: TrainState, batchSamples: PreparedSample[], opts: TrainOptions, firstStep: boolean, tick?: Tick): Promise<StepCore> {
  const { lora, optimizer } = state;
  const len = (s: PreparedSample) => s.tokens.length - s.promptLength;
  const totals: StepTotals = { rlTokens: 0, topkTokens: 0 };
  for (const s of batchSamples) {
    const sig = signalOf(opts.method, s);
    if (sig.rl) totals.rlTokens += len(s);
    if (sig.topk) totals.topkTokens += len(s);
  }
  const vars = loraParamRecord(lora);
  const sum: Record<string, tf.Tensor> = {};
  const scalars: tf.Scalar[] = [];
  let trained = 0;
  let absSum = 0;
  let kept = Infinity;
  const saved = { tokenBlocks: 0 };
  try {
    for (const group of microBatches(batchSamples, opts.microBatchTokens ?? Infinity)) {
      const r = await groupPass(state, group, opts, totals, firstStep, saved, tick);
      kept = Math.min(kept, r.keptBlocks);
      trained += r.trained;
      absSum += r.absSum;
      scalars.push(r.loss, r.clipFraction, r.kl);
      for (const [key, g] of r.grads) {
        const prev = sum[key];
        sum[key] = prev ? tf.add(prev, g) : g;
        if (prev) {
          prev.dispose();
          g.dispose();
        }
      }
    }
    // A variable the loss does not reach (no trained token) gets a zero gradient.
    for (const [key, v] of Object.entries(vars)) sum[key] ??= tf.zerosLike(v);
    const info = optimizer.applyGradients(sum, opts.lr);
    const totalsT = tf.tidy(() => {
      const parts = (i: number) => tf.addN(scalars.filter((_, j) => j % 3 === i));
      return tf.stack([parts(0), parts(1), parts(2), info.gradNorm]);
    });
    info.gradNorm.dispose();
    const [v] = await readBack([totalsT]);
    totalsT.dispose();
    const gradNorm = v[3];
    return {
      step: optimizer.step,
      loss: v[0],
      clipFraction: v[1],
      kl: v[2],
      gradNorm,
      clipped: optimizer.options.maxGradNorm > 0 && gradNorm > optimizer.options.maxGradNorm,
      samples: batchSamples.length,
      trainedTokens: trained,
      tokens: batchSamples.reduce((a, s) => a + s.tokens.length, 0),
      meanAbsAdvantage: trained > 0 ? absSum / trained : 0,
      keptBlocks: Number.isFinite(kept) ? kept : 0,
      ...(opts.cache ? { savedTokenBlocks: saved.tokenBlocks } : {}),
    };
  } finally {
    tf.dispose([...Object.values(sum), ...scalars]);
  }
}

/** What the phases of one micro-batch's pass share: the samples, their layout, the tensors to free. */
interface Group {
  state: TrainState;
  samples: PreparedSample[];
  opts: TrainOptions;
  method: Method;
  /** k of top-k OPD (0 for the other methods). */
  k: number;
  plan: BatchPlan;
  /** Scored (response) tokens in the micro-batch. */
  n: number;
  /** Where each sample's response tokens start in the flat order. */
  offsets: number[];
  lenOf: (b: number) => number;
  teacherLora: LoraParams | null;
  /** Keeps a tensor until the pass ends (freed in groupPass's finally). */
  own: <T extends tf.Tensor>(t: T) => T;
  tick?: Tick;
  cache?: PassCache;
  /** The run's first step: its forward runs under the run-start adapter. */
  firstStep: boolean;
  /** Token-blocks the cache saved in this step (added to). */
  saved: { tokenBlocks: number };
}

/** Phase 1's outputs: the student's log-probs and what the head gradient and top-k need of its forward. */
interface StudentForward {
  head: HeadResult;
  lp: tf.Tensor2D;
  expectation: tf.Tensor2D;
  topIdsArr: Float32Array;
  topLpArr: Float32Array;
  /** lp_old per sample: as served when the sample brought them, else this forward's. */
  oldResp: number[][];
}

/** Forward, teacher passes, loss gradient and backward of one micro-batch. */
async function groupPass(
  state: TrainState,
  batchSamples: PreparedSample[],
  opts: TrainOptions,
  totals: StepTotals,
  firstStep: boolean,
  saved: { tokenBlocks: number },
  tick?: Tick,
): Promise<GroupResult> {
  const { model, lora } = state;
  const method = opts.method;
  const plan = planBatch({ tokens: batchSamples.map((s) => s.tokens), targetStart: batchSamples.map((s) => s.promptLength) }, model.config.nVocab);
  const owned: tf.Tensor[] = [];
  const g: Group = {
    state,
    samples: batchSamples,
    opts,
    method,
    k: method === "topk" ? (opts.topK ?? TOPK_DEFAULT_K) : 0,
    plan,
    n: plan.targets.length,
    offsets: responseOffsets(batchSamples),
    lenOf: (b: number) => batchSamples[b].tokens.length - batchSamples[b].promptLength,
    teacherLora: opts.teacher === "base" ? null : lora,
    own: <T extends tf.Tensor>(t: T): T => (owned.push(t), t),
    tick,
    cache: opts.cache,
    firstStep,
    saved,
  };
  const ctx = seqContext(model, plan.grid, tick);
  try {
    // 1. Forward with the current adapter, keeping each block's input for the backward pass
    //    (and, for the last opts.keptBlocks blocks, their activations: no recompute).
    const keptBlocks = keptOf(
      model,
      opts,
      batchSamples.map((s) => s.tokens.length),
    );
    const body = runBody(model, lora, plan.grid, ctx, true, keptBlocks);
    let bodyAlive = true;
    try {
      const student = await studentForward(g, body);
      // 2. Teacher log-probs on the hint-augmented prompt, scoring the same response tokens.
      const { teacherResp, topkTeacher } = await teacherScores(g, student.topIdsArr);
      // 3. Advantages per response token, in the batch's flat order; the anchor's reference; top-k inputs.
      const adv = advantagesOfGroup(g, student.oldResp, teacherResp);
      const ref = await anchorReference(g);
      const topkIn = topkInputs(g, student, topkTeacher, adv.rlMask);
      // 4. ∂loss/∂(log-probs), then back through the head and the blocks.
      const { gFlat, ids, lossT, clipT, klT } = lossGradient(g, student, adv, ref, topkIn, totals);
      g.own(gFlat);
      const dh = g.own(headGradient(model.weights, ids, gFlat, student.expectation));
      bodyAlive = false;
      const grads = backwardBody(model, lora, plan, body as BodyResult & { inputs: tf.Tensor2D[] }, dh, ctx);
      return { grads, loss: lossT, clipFraction: clipT, kl: klT, trained: adv.trained + topkIn.trainedExtra, absSum: adv.absSum, keptBlocks };
    } finally {
      if (bodyAlive) disposeBody(body);
    }
  } finally {
    ctx.dispose();
    tf.dispose(owned);
  }
}

/**
 * Phase 1, the student's head over the forward's final states: its log-probs are lp_old wherever
 * a sample did not bring the ones it was served with (on-policy: the ratio starts at exactly 1),
 * and its top-k is the student's for top-k OPD.
 */
async function studentForward(g: Group, body: BodyResult): Promise<StudentForward> {
  const { model } = g.state;
  const { own, plan, n, offsets, lenOf } = g;
  const h = own(tf.tidy(() => finalNorm(model, scoredRows(body.final, plan))));
  // The run's first step runs under the adapter the run started from: the gate's serving rows when it serves.
  if (g.cache?.runStart && g.firstStep)
    g.cache.putRows(
      g.cache.runStart,
      g.samples.map((s) => seqKey(s.tokens, s.promptLength)),
      g.samples.map((_, b) => lenOf(b)),
      h,
    );
  const head = headForward(model.weights, { h, ids: plan.targets, topK: g.k, expectation: true });
  own(head.lse);
  const lp = own(tf.reshape<tf.Rank.R2>(head.logprobs!, [1, n]));
  head.logprobs!.dispose();
  const expectation = own(head.expectation!);
  if (head.top) {
    own(head.top.ids);
    own(head.top.logprobs);
  }
  const [lpArr, topIdsArr, topLpArr] = await readBack([lp, ...(head.top ? [head.top.ids, head.top.logprobs] : [])]);
  const oldResp = g.samples.map((s, b) => s.servedLogprobs ?? Array.from(lpArr.subarray(offsets[b], offsets[b] + lenOf(b))));
  return { head, lp, expectation, topIdsArr, topLpArr, oldResp };
}

/**
 * Phase 2, the teachers: per hinted sample, the teacher's log-probs of the response tokens (OPD,
 * combined) or, for top-k, the chosen hint's teacher's log-probs at the student's top-k ids.
 */
async function teacherScores(
  g: Group,
  topIdsArr: Float32Array,
): Promise<{ teacherResp: Array<number[] | undefined>; topkTeacher: Array<Float32Array | undefined> }> {
  const { model } = g.state;
  const { samples, method, k, offsets, lenOf, teacherLora, tick } = g;
  const teacherResp = new Array<number[] | undefined>(samples.length).fill(undefined);
  const topkTeacher = new Array<Float32Array | undefined>(samples.length).fill(undefined);
  const hinted = samples.map((s, b) => (s.teachers.length > 0 ? b : -1)).filter((b) => b >= 0);
  if (hinted.length === 0 || method === "binary") return { teacherResp, topkTeacher };
  if (method !== "topk") {
    // With a cache: the base teacher's log-probs never change; the current policy's are the run's (its first use of the sample).
    const cache = g.cache;
    const keyOf = (b: number) => seqKey(samples[b].teachers[0].tokens, samples[b].teachers[0].promptLength);
    const cached = (b: number) => (!cache ? undefined : teacherLora === null ? cache.baseLp.get(keyOf(b)) : cache.runLp.get(keyOf(b)));
    const missing: number[] = [];
    for (const b of hinted) {
      const c = cached(b);
      if (c) teacherResp[b] = Array.from(c);
      else missing.push(b);
    }
    if (cache) {
      const saved = (gridTokens(hinted.map((b) => samples[b].teachers[0])) - gridTokens(missing.map((b) => samples[b].teachers[0]))) * model.config.nLayer;
      g.saved.tokenBlocks += saved;
      cache.saved.teacher += saved;
    }
    if (missing.length === 0) return { teacherResp, topkTeacher };
    const tb = missing.map((b) => samples[b].teachers[0]);
    const t = scoreResponses(model, teacherLora, tb, undefined, tick);
    const [arr] = await readBack([t]);
    t.dispose();
    let off = 0;
    missing.forEach((b) => {
      const lp = arr.subarray(off, off + lenOf(b));
      teacherResp[b] = Array.from(lp);
      if (cache && teacherLora === null) cache.baseLp.set(keyOf(b), lp);
      else if (cache) cache.runLp.set(keyOf(b), lp);
      off += lenOf(b);
    });
    return { teacherResp, topkTeacher };
  }
  for (const b of hinted) {
    const s = samples[b];
    const studentIds = topIdsArr.subarray(offsets[b] * k, (offsets[b] + lenOf(b)) * k);
    const rowsOf = (a: ArrayLike<number>) => Array.from({ length: lenOf(b) }, (_, j) => Array.from(a as Float32Array).slice(j * k, (j + 1) * k));
    let chosen = 0;
    if (s.teachers.length > 1) {
      const plans = s.teachers.map((c) => planBatch({ tokens: [c.tokens], targetStart: [c.promptLength] }, model.config.nVocab));
      const cand: number[][][] = [];
      for (const p of plans) {
        const hd = scorePlan(model, teacherLora, p, { topK: k, tick });
        const [ids] = await readBack([hd.top!.ids]);
        tf.dispose([hd.lse, hd.logprobs!, hd.top!.ids, hd.top!.logprobs]);
        cand.push(rowsOf(ids));
      }
      chosen = selectHint(rowsOf(studentIds), cand);
    }
    // The chosen teacher's log-probs at the student's top-k ids.
    const t = scoreResponses(model, teacherLora, [s.teachers[chosen]], Int32Array.from(studentIds), tick);
    const [arr] = await readBack([t]);
    t.dispose();
    topkTeacher[b] = arr;
  }
  return { teacherResp, topkTeacher };
}

/** Phase 3's advantages: per response token, in the batch's flat order, with the RL mask and lp_old. */
interface GroupAdvantages {
  adv: Float32Array;
  rlMask: Float32Array;
  oldFlat: Float32Array;
  absSum: number;
  trained: number;
}

function advantagesOfGroup(g: Group, oldResp: number[][], teacherResp: Array<number[] | undefined>): GroupAdvantages {
  const { n, offsets } = g;
  const adv = new Float32Array(n);
  const rlMask = new Float32Array(n);
  const oldFlat = new Float32Array(n);
  let absSum = 0;
  let trained = 0;
  g.samples.forEach((s, b) => {
    oldFlat.set(oldResp[b], offsets[b]);
    const a = advantagesFor(g.method, { reward: s.reward, teacherLp: teacherResp[b], oldLp: oldResp[b] }, g.opts.weights);
    if (!a) return;
    a.forEach((v, j) => {
      adv[offsets[b] + j] = v;
      rlMask[offsets[b] + j] = 1;
      absSum += Math.abs(v);
      trained++;
    });
  });
  return { adv, rlMask, oldFlat, absSum, trained };
}

/**
 * The KL anchor's reference log-probs [1, n] when ppo.klBeta > 0, else undefined: the base model
 * on the prompt the sample is taught toward, with its hint (its first OPD teacher's prompt) when
 * the method distils it, else the bare prompt. Anchored to the bare base, OPD's stationary point
 * is (log π_T + β log π_base)/(1 + β): the anchor pulls against the hinted teacher (on the
 * stories260K cats eval OPD stopped gaining).
 */
async function anchorReference(g: Group): Promise<tf.Tensor2D | undefined> {
  if (!((g.opts.ppo?.klBeta ?? 0) > 0)) return undefined;
  const refSamples = g.samples.map((s) => anchorOf(g.method, s));
  if (g.cache) return cachedAnchorReference(g, g.cache, refSamples);
  const r = scoreResponses(g.state.model, null, refSamples, undefined, g.tick);
  const ref = g.own(tf.reshape<tf.Rank.R2>(r, [1, g.n]));
  r.dispose();
  return ref;
}

/** The sequence a sample's anchor scores its response on: its first teacher's when the method distils it, else its own. */
function anchorOf(method: Method, s: PreparedSample): { tokens: number[]; promptLength: number } {
  return method !== "binary" && s.teachers.length > 0 ? s.teachers[0] : s;
}

/**
 * The anchor's reference through the pass cache: the base model never changes in a process, so
 * only the samples it has not scored yet go through a base pass (baseScoresInto).
 */
async function cachedAnchorReference(g: Group, cache: PassCache, refSamples: Array<{ tokens: number[]; promptLength: number }>): Promise<tf.Tensor2D> {
  const { model } = g.state;
  const keys = refSamples.map((r) => seqKey(r.tokens, r.promptLength));
  const lps = keys.map((k) => cache.baseLp.get(k));
  const missing = lps.flatMap((lp, b) => (lp ? [] : [b]));
  const saved = (gridTokens(refSamples) - gridTokens(missing.map((b) => refSamples[b]))) * model.config.nLayer;
  g.saved.tokenBlocks += saved;
  cache.saved.anchor += saved;
  if (missing.length > 0) {
    const scored = await baseScoresInto(
      model,
      cache,
      missing.map((b) => ({ ...refSamples[b], own: refSamples[b] === g.samples[b] })),
      g.tick,
    );
    missing.forEach((b, i) => (lps[b] = scored[i]));
  }
  const flat = new Float32Array(g.n);
  lps.forEach((lp, b) => flat.set(lp!, g.offsets[b]));
  return g.own(tf.tensor2d(flat, [1, g.n]));
}

/**
 * One base pass over `seqs` (the gate's scoredHidden: body and final norm; then the head, as
 * scorePlan runs them): each one's response log-probs go into the cache, and the base rows of
 * those scored on their own sequence (`own`: not a hinted teacher's prompt) too, for the gate.
 */
async function baseScoresInto(
  model: BaseModel,
  cache: PassCache,
  seqs: Array<{ tokens: number[]; promptLength: number; own: boolean }>,
  tick?: Tick,
): Promise<Float32Array[]> {
  const keys = seqs.map((s) => seqKey(s.tokens, s.promptLength));
  const lens = seqs.map((s) => s.tokens.length - s.promptLength);
  const plan = planBatch({ tokens: seqs.map((s) => s.tokens), targetStart: seqs.map((s) => s.promptLength) }, model.config.nVocab);
  const h = scoredHidden(model, null, plan, tick);
  try {
    cache.putRows(
      BASE,
      seqs.map((s, i) => (s.own ? keys[i] : null)),
      lens,
      h,
    );
    const head = headForward(model.weights, { h, ids: plan.targets });
    head.lse.dispose();
    const [arr] = await readBack([head.logprobs!]);
    head.logprobs!.dispose();
    let off = 0;
    return keys.map((k, i) => {
      const lp = arr.subarray(off, off + lens[i]);
      cache.baseLp.set(k, lp);
      off += lens[i];
      return lp;
    });
  } finally {
    h.dispose();
  }
}

/**
 * The anchor's base scores of samples before their run (worker.ts `prepare`): what the run's
 * first step would score, in micro-batches of at most `microBatchTokens`, skipping what the
 * cache holds. Returns how many were scored now and how many were already held.
 */
export async function prepareAnchors(
  model: BaseModel,
  cache: PassCache,
  samples: readonly PreparedSample[],
  method: Method,
  microBatchTokens = Infinity,
): Promise<{ scored: number; cached: number }> {
  const refs = samples.filter((s) => isEligible(method, s)).map((s) => ({ ...anchorOf(method, s), own: anchorOf(method, s) === s }));
  const seen = new Set<string>();
  const todo = refs.filter((r) => {
    const k = seqKey(r.tokens, r.promptLength);
    if (cache.baseLp.has(k) || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  for (const group of microBatches(todo, microBatchTokens)) await baseScoresInto(model, cache, group);
  return { scored: todo.length, cached: refs.length - todo.length };
}

/** Top-k OPD inputs [1, n, k] at the student's top-k ids (lp_old there = this forward's). */
interface TopkInputs {
  topk?: { lp: tf.Tensor3D; old: tf.Tensor3D; teacher: tf.Tensor3D; mask: tf.Tensor2D };
  /** Tokens carrying the top-k term. */
  count: number;
  /** Tokens trained by the top-k term alone (no RL signal on them). */
  trainedExtra: number;
}

function topkInputs(g: Group, student: StudentForward, topkTeacher: Array<Float32Array | undefined>, rlMask: Float32Array): TopkInputs {
  const { n, k, offsets, lenOf, own } = g;
  if (!(g.method === "topk" && topkTeacher.some(Boolean))) return { count: 0, trainedExtra: 0 };
  let count = 0;
  let trainedExtra = 0;
  const tK = new Float32Array(n * k);
  const mK = new Float32Array(n);
  g.samples.forEach((s, b) => {
    const tt = topkTeacher[b];
    if (!tt) return;
    tK.set(tt, offsets[b] * k);
    mK.fill(1, offsets[b], offsets[b] + lenOf(b));
    count += lenOf(b);
    if (!rlMask.subarray(offsets[b], offsets[b] + lenOf(b)).some(Boolean)) trainedExtra += lenOf(b);
  });
  const topk = {
    lp: own(tf.reshape<tf.Rank.R3>(student.head.top!.logprobs, [1, n, k])),
    old: own(tf.tensor3d(student.topLpArr, [1, n, k])),
    teacher: own(tf.tensor3d(tK, [1, n, k])),
    mask: own(tf.tensor2d(mK, [1, n])),
  };
  return { topk, count, trainedExtra };
}

/**
 * Phase 4's first half: the loss of the micro-batch and its gradient with respect to the scored
 * log-probs (and, for top-k, the candidates'), as rows for the head gradient with their ids.
 */
function lossGradient(
  g: Group,
  student: StudentForward,
  a: GroupAdvantages,
  ref: tf.Tensor2D | undefined,
  topkIn: TopkInputs,
  totals: StepTotals,
): { gFlat: tf.Tensor2D; ids: Int32Array; lossT: tf.Scalar; clipT: tf.Scalar; klT: tf.Scalar } {
  const { n, k, own, opts, plan } = g;
  const { lp } = student;
  const { topk } = topkIn;
  const advT = own(tf.tensor2d(a.adv, [1, n]));
  const maskT = own(tf.tensor2d(a.rlMask, [1, n]));
  const oldT = own(tf.tensor2d(a.oldFlat, [1, n]));
  const useRl = a.rlMask.some(Boolean) || ref !== undefined;
  const ppoIn = (lpx: tf.Tensor) => ({ logprobs: lpx as tf.Tensor2D, oldLogprobs: oldT, advantages: advT, mask: maskT, ...(ref ? { refLogprobs: ref } : {}) });
  // Each term is a token mean over its own tokens in this micro-batch; weighted by this
  // micro-batch's share of the step's tokens, the micro-batches add up to the step's means.
  const rlShare = a.rlMask.reduce((s, x) => s + x, 0) / Math.max(1, totals.rlTokens);
  const topkShare = topkIn.count / Math.max(1, totals.topkTokens);
  const lossOf = (lpx: tf.Tensor, lpK?: tf.Tensor): tf.Scalar => {
    // 0·Σ lp keeps the loss a function of its inputs when no token carries a signal.
    let loss: tf.Scalar = tf.mul<tf.Scalar>(tf.sum(lpx), 0);
    if (useRl) loss = tf.add(loss, tf.mul(ppoClipLoss(ppoIn(lpx), opts.ppo).loss, rlShare)); // w_rl is inside the advantages
    if (topk && lpK) {
      const lOpd = topkOpdLoss({ logprobs: lpK as tf.Tensor3D, oldLogprobs: topk.old, teacherLogprobs: topk.teacher, mask: topk.mask }, opts.ppo);
      loss = tf.add(loss, tf.mul(tf.scalar((opts.weights?.wOpd ?? 1) * topkShare), lOpd));
    }
    return loss;
  };
  // Rows of the head gradient: each row's target, then (top-k) its k candidate ids.
  const ids = !topk ? plan.targets : new Int32Array(n * (1 + k));
  if (topk) {
    for (let j = 0; j < n; j++) {
      ids[j * (1 + k)] = plan.targets[j];
      for (let v = 0; v < k; v++) ids[j * (1 + k) + 1 + v] = student.topIdsArr[j * k + v];
    }
  }
  const out = tf.tidy(() => {
    const st = useRl ? ppoClipLoss(ppoIn(lp), opts.ppo) : { clipFraction: tf.scalar(0), kl: tf.scalar(0) };
    const stats = { clipFraction: tf.mul<tf.Scalar>(st.clipFraction, rlShare), kl: tf.mul<tf.Scalar>(st.kl, rlShare) };
    if (!topk) {
      const [gr] = tf.grads((x: tf.Tensor) => lossOf(x))([lp]);
      return { gFlat: tf.reshape<tf.Rank.R2>(gr, [n, 1]), lossT: lossOf(lp), clipT: stats.clipFraction, klT: stats.kl };
    }
    const [gr, gK] = tf.grads((x: tf.Tensor, y: tf.Tensor) => lossOf(x, y))([lp, topk.lp]);
    const both = tf.concat<tf.Tensor2D>([tf.reshape(gr, [n, 1]), tf.reshape(gK, [n, k])], 1);
    return { gFlat: both, lossT: lossOf(lp, topk.lp), clipT: stats.clipFraction, klT: stats.kl };
  });
  return { ...out, ids };
}
