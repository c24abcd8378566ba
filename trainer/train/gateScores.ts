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
import { headRowBlocks } from "../../models/arch/layout.js";
import { finalNorm, planBatch, scorePlan, scoredRows, type BatchPlan } from "../model/logprobs.js";
import { readBack } from "./readBack.js";
import { WorkMeter } from "./workMeter.js";
import { BASE, seqKey, type PassCache } from "./passCache.js";
// The gate's forward batches are split as a training step's micro-batches are: one splitter.
import { microBatches } from "./trainSteps.js";

export interface ScoredSeq {
  tokens: number[];
  /** First scored position (≥ 1). */
  start: number;
}

/** Tokens per forward batch by default: bounds the activations one gate batch holds. */
const BATCH_TOKENS = 4096;

function plan(model: BaseModel, seqs: ScoredSeq[]): BatchPlan {
  return planBatch({ tokens: seqs.map((s) => s.tokens), targetStart: seqs.map((s) => s.start) }, model.config.nVocab);
}

/** Final-normed scored rows of a planned batch under `lora`, [n, nEmbd] (scorePlan's, before the head). */
export function scoredHidden(model: BaseModel, lora: LoraParams | null, p: BatchPlan, tick?: (tokenBlocks: number) => void): tf.Tensor2D {
  const ctx = seqContext(model, p.grid, tick);
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
export async function meanKl(
  model: BaseModel,
  cand: LoraParams,
  serving: LoraParams | null,
  seqs: ScoredSeq[],
  batchTokens = BATCH_TOKENS,
): Promise<{ kl: number | null; positions: number }> {
  let sum = 0;
  let n = 0;
  for (const group of microBatches(seqs, batchTokens)) {
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
  for (const group of microBatches(seqs, batchTokens)) {
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

export interface GateSets {
  /** recent main turns: KL to the serving adapter and to the base model */
  prompts: ScoredSeq[];
  /** answers the user liked / disliked: their log-prob under the candidate and the serving adapter */
  liked: ScoredSeq[];
  disliked: ScoredSeq[];
  /** held-back turns: KL to the base model */
  heldBack: ScoredSeq[];
}

export interface GateFigures {
  /** KL(candidate ‖ serving) on the prompts */
  kl: { kl: number | null; positions: number };
  /** KL(candidate ‖ base) on the prompts and on the held-back turns */
  recent: { kl: number | null; positions: number };
  heldBack: { kl: number | null; positions: number };
  liked: { candidate: number | null; serving: number | null; count: number };
  disliked: { candidate: number | null; serving: number | null; count: number };
  /** With a pass cache: distinct sequences whose serving or base rows came from it, and the body token-blocks it saved. */
  reuse?: { reusedRows: number; savedTokenBlocks: number };
}

type Role = keyof GateSets;

export interface GateFiguresOptions {
  /** most padded tokens per forward batch (the memory plan's micro-batch; default 4096) */
  batchTokens?: number;
  /** fraction of the block passes done, at most once a second: at a real size on a CPU the gate's passes take minutes */
  onProgress?: (fraction: number) => void;
  progressEveryMs?: number;
  /**
   * The warm process's pass cache: sequences whose serving rows (under the adapter whose
   * fingerprint is `servingFingerprint`, or the base model's when none serves) or base rows it
   * holds skip those body passes, and the passes the gate runs leave their rows in it (the
   * candidate's under `candidateFingerprint`: they are the serving rows of the next cycle when
   * it is published).
   */
  cache?: PassCache;
  servingFingerprint?: string | null;
  candidateFingerprint?: string | null;
}

type Member = ScoredSeq & { roles: Set<Role> };
type Sum = { sum: number; n: number };

/** The distinct sequences of the sets, each with the sets it is in. */
function distinctSequences(sets: GateSets): Member[] {
  const unique: Member[] = [];
  const byKey = new Map<string, number>();
  for (const role of ["prompts", "liked", "disliked", "heldBack"] as const) {
    for (const s of sets[role]) {
      const key = `${s.start}:${s.tokens.join(",")}`;
      let i = byKey.get(key);
      if (i === undefined) {
        i = unique.push({ ...s, roles: new Set() }) - 1;
        byKey.set(key, i);
      }
      unique[i].roles.add(role);
    }
  }
  return unique;
}

/** Sums over positions (KL) and over answer tokens (log-probs); a sequence counts once per set it is in, as in the separate measures. */
interface Sums {
  klServ: Sum;
  klBaseRecent: Sum;
  klBaseHeld: Sum;
  lp: Record<"liked" | "disliked", { candidate: Sum; serving: Sum }>;
}

function newSums(): Sums {
  const sum = () => ({ sum: 0, n: 0 });
  return {
    klServ: sum(),
    klBaseRecent: sum(),
    klBaseHeld: sum(),
    lp: { liked: { candidate: sum(), serving: sum() }, disliked: { candidate: sum(), serving: sum() } },
  };
}

/** What one batch read back: the candidate's log-probs and KL to the serving rows, the serving log-probs, the KL to the base rows. */
type BatchRead = Partial<Record<"lpC" | "klS" | "lpS" | "klB", Float32Array>>;

/** Adds a batch's read-back to the sums, sequence by sequence in span order. */
function addBatch(sums: Sums, group: Member[], p: BatchPlan, read: BatchRead): void {
  const klBase = read.klB ?? read.klS;
  let row = 0;
  group.forEach((s, i) => {
    const n = p.spans[i].end - p.spans[i].start;
    const add = (acc: Sum, v: Float32Array) => {
      let t = 0;
      for (let r = row; r < row + n; r++) t += v[r];
      acc.sum += t;
      acc.n += n;
    };
    if (s.roles.has("prompts")) {
      add(sums.klServ, read.klS!);
      add(sums.klBaseRecent, klBase!);
    }
    if (s.roles.has("heldBack")) add(sums.klBaseHeld, klBase!);
    for (const r of ["liked", "disliked"] as const) {
      if (!s.roles.has(r)) continue;
      add(sums.lp[r].candidate, read.lpC!);
      add(sums.lp[r].serving, read.lpS!);
    }
    row += n;
  });
}

/** One batch of the gate's work: its sequences and which passes it runs. */
interface GateBatch {
  group: Array<Member & { i: number }>;
  p: BatchPlan;
  wantLp: boolean;
  klServRef: boolean;
  servingRows: boolean;
  baseRows: boolean;
  servingCached: boolean;
  baseCached: boolean;
  headBlocks: number;
  tokenBlocks: number;
}

/**
 * What each batch needs, decided first so that the progress knows the whole work. `classes`:
 * the sequences grouped by whether the cache holds their serving ("1?") and base ("?1") rows.
 */
function planBatches(model: BaseModel, serving: LoraParams | null, classes: Map<string, Array<Member & { i: number }>>, budget: number): GateBatch[] {
  return [...classes.entries()].flatMap(([c, members]) =>
    microBatches(members, budget).flatMap((group) => {
      const p = plan(model, group);
      if (p.targets.length === 0) return [];
      const has = (r: Role) => group.some((s) => s.roles.has(r));
      const wantLp = has("liked") || has("disliked");
      const wantKlBase = has("prompts") || has("heldBack");
      // Without an adapter serving, the serving policy is the base model: one set of rows serves both.
      const klServRef = has("prompts") || (serving === null && wantKlBase);
      const servingRows = klServRef || wantLp;
      const baseRows = serving !== null && wantKlBase;
      // Every sequence of the batch has these rows in the cache: no pass for them.
      const servingCached = servingRows && c[0] === "1";
      const baseCached = baseRows && c[1] === "1";
      const passes = 1 + (servingRows && !servingCached ? 1 : 0) + (baseRows && !baseCached ? 1 : 0);
      // Output projections over the targets (a KL reads two: each side's rows): minutes at a real vocabulary.
      const headPasses = (wantLp || klServRef ? 1 + (klServRef ? 1 : 0) : 0) + (wantLp ? 1 : 0) + (baseRows ? 2 : 0);
      const headBlocks = p.targets.length * headRowBlocks(model.config);
      const tokenBlocks = passes * p.grid.rows * model.config.nLayer + headPasses * headBlocks;
      return [{ group, p, wantLp, klServRef, servingRows, baseRows, servingCached, baseCached, headBlocks, tokenBlocks }];
    }),
  );
}

/** What the cache saved: the body passes the same sets need without it, less those that run. */
function cacheSavings(
  model: BaseModel,
  serving: LoraParams | null,
  unique: Member[],
  work: GateBatch[],
  budget: number,
): { reusedRows: number; savedTokenBlocks: number } {
  const layerPasses = (seqs: ScoredSeq[]) => plan(model, seqs).grid.ids.length * model.config.nLayer;
  let reusedRows = 0;
  let savedTokenBlocks = 0;
  for (const group of microBatches(unique, budget)) {
    const has = (r: Role) => group.some((s) => s.roles.has(r));
    const servingRows = has("prompts") || has("liked") || has("disliked") || (serving === null && has("heldBack"));
    const baseRows = serving !== null && (has("prompts") || has("heldBack"));
    savedTokenBlocks += ((servingRows ? 1 : 0) + (baseRows ? 1 : 0)) * layerPasses(group);
  }
  for (const w of work) {
    savedTokenBlocks -= ((w.servingRows && !w.servingCached ? 1 : 0) + (w.baseRows && !w.baseCached ? 1 : 0)) * layerPasses(w.group);
    if (w.servingCached || w.baseCached) reusedRows += w.group.length;
  }
  return { reusedRows, savedTokenBlocks };
}

/** The rows the cache holds for the gate's sequences, taken before any batch runs (the rows this gate adds may evict them). */
class PinnedRows {
  readonly serving = new Map<number, tf.Tensor2D>();
  readonly base = new Map<number, tf.Tensor2D>();
  constructor(
    private readonly cache: PassCache | undefined,
    private readonly keys: string[],
  ) {}

  /** Takes sequence i's rows under fingerprint `fp` into `m` (clones sharing the data); whether the cache had them. */
  pin(m: Map<number, tf.Tensor2D>, fp: string | null, i: number): boolean {
    const t = this.cache && fp !== null ? this.cache.takeRows(fp, this.keys[i]) : undefined;
    if (t) m.set(i, t);
    return t !== undefined;
  }

  /** A batch's rows, in span order. */
  take(m: Map<number, tf.Tensor2D>, group: Array<{ i: number }>): tf.Tensor2D {
    const parts = group.map((s) => m.get(s.i)!);
    for (const s of group) m.delete(s.i);
    if (parts.length === 1) return parts[0];
    const out = tf.concat<tf.Tensor2D>(parts);
    tf.dispose(parts);
    return out;
  }

  /** Rows taken for a batch that turned out not to need them. */
  dispose(): void {
    tf.dispose([...this.serving.values(), ...this.base.values()]);
  }
}

/**
 * Everything the publish gate measures (meanKl and meanLogProb over each set), with one body
 * pass per policy over each distinct sequence: the sets overlap (a recent turn is often also a
 * liked one, or held back), and at a real size a pass over a turn is seconds on a CPU. Per
 * batch, only what its sequences' sets need: the candidate's rows always, the serving
 * adapter's for KL to it or the answers' log-probs, the base model's for the drift when
 * another adapter serves; one head pass gives the candidate's log-probs and its KL together. Equal to the separate measures (test/trainer/gateScores.test.ts).
 */
export async function gateFigures(
  model: BaseModel,
  cand: LoraParams,
  serving: LoraParams | null,
  sets: GateSets,
  opts: GateFiguresOptions = {},
): Promise<GateFigures> {
  const unique = distinctSequences(sets);
  const sums = newSums();
  // With a cache: the sequences grouped by whether it holds their serving rows and their base
  // rows, so that a batch whose rows are all cached skips that body pass. One group without it.
  const cache = opts.cache;
  const servFp = serving === null ? BASE : (opts.servingFingerprint ?? null);
  const keys = cache ? unique.map((s) => seqKey(s.tokens, s.start)) : [];
  const pinned = new PinnedRows(cache, keys);
  const classes = new Map<string, Array<Member & { i: number }>>();
  unique.forEach((s, i) => {
    const c = `${pinned.pin(pinned.serving, servFp, i) ? 1 : 0}${serving !== null && pinned.pin(pinned.base, BASE, i) ? 1 : 0}`;
    if (!classes.has(c)) classes.set(c, []);
    classes.get(c)!.push({ ...s, i });
  });
  const budget = opts.batchTokens ?? BATCH_TOKENS;
  const work = planBatches(model, serving, classes, budget);
  const onProgress = opts.onProgress;
  const meter = onProgress
    ? new WorkMeter(
        work.reduce((a, w) => a + w.tokenBlocks, 0),
        onProgress,
        opts.progressEveryMs,
      )
    : null;
  const reuse = cache ? cacheSavings(model, serving, unique, work, budget) : null;
  // Leaves a computed batch's rows in the cache, per sequence.
  const toCache = (fp: string | null | undefined, group: Array<{ i: number }>, p: BatchPlan, h: tf.Tensor2D) => {
    if (cache && fp)
      cache.putRows(
        fp,
        group.map((s) => keys[s.i]),
        p.spans.map((sp) => sp.end - sp.start),
        h,
      );
  };
  try {
    for (const { group, p, wantLp, klServRef, servingRows, baseRows, servingCached, baseCached, headBlocks } of work) {
      const owned: tf.Tensor[] = [];
      const keep = <T extends tf.Tensor>(x: T): T => (owned.push(x), x);
      const hc = keep(scoredHidden(model, cand, p, meter?.tick));
      toCache(opts.candidateFingerprint, group, p, hc);
      let hs: tf.Tensor2D | null = null;
      if (servingCached) hs = keep(pinned.take(pinned.serving, group));
      else if (servingRows) {
        hs = keep(scoredHidden(model, serving, p, meter?.tick));
        toCache(servFp, group, p, hs);
      }
      let hb: tf.Tensor2D | null = null;
      if (baseCached) hb = keep(pinned.take(pinned.base, group));
      else if (baseRows) {
        hb = keep(scoredHidden(model, null, p, meter?.tick));
        toCache(BASE, group, p, hb);
      }
      // One head pass for the candidate's log-probs and, where asked, its KL to the serving rows.
      const head = (req: Parameters<typeof headForward>[1]) => {
        const r = headForward(model.weights, req);
        meter?.tick(headBlocks * (req.klAgainst ? 2 : 1));
        return r;
      };
      const headC = wantLp || klServRef ? head({ h: hc, ids: p.targets, ...(klServRef ? { klAgainst: hs! } : {}) }) : null;
      const headS = wantLp ? head({ h: hs!, ids: p.targets }) : null;
      const headB = hb ? head({ h: hc, klAgainst: hb }) : null;
      for (const h of [headC, headS, headB]) if (h) owned.push(...[h.lse, h.logprobs, h.kl].filter((x): x is tf.Tensor1D | tf.Tensor2D => x !== undefined));
      // One read-back per batch, of what was computed.
      const parts = { lpC: headC?.logprobs, klS: headC?.kl, lpS: headS?.logprobs, klB: headB?.kl };
      const names = (Object.keys(parts) as Array<keyof typeof parts>).filter((k) => parts[k] !== undefined);
      const values = await readBack(names.map((k) => parts[k]!));
      tf.dispose(owned);
      addBatch(sums, group, p, Object.fromEntries(names.map((k, i) => [k, values[i]])));
    }
  } finally {
    pinned.dispose();
  }
  const mean = (a: Sum) => (a.n > 0 ? a.sum / a.n : null);
  const kl = (a: Sum) => ({ kl: mean(a), positions: a.n });
  const cmp = (r: "liked" | "disliked") => ({ candidate: mean(sums.lp[r].candidate), serving: mean(sums.lp[r].serving), count: sets[r].length });
  if (cache && reuse) {
    cache.saved.reusedRows += reuse.reusedRows;
    cache.saved.gate += reuse.savedTokenBlocks;
  }
  return {
    kl: kl(sums.klServ),
    recent: kl(sums.klBaseRecent),
    heldBack: kl(sums.klBaseHeld),
    liked: cmp("liked"),
    disliked: cmp("disliked"),
    ...(reuse ? { reuse } : {}),
  };
}
