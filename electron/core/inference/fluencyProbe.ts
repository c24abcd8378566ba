import { createHash } from "node:crypto";
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { targetLogprobs } from "./tokenProbability.js";
import { assertLoadableGguf } from "../../../models/gguf/loadable.js";
import { loadBoundMs, loadWithin } from "./loadBound.js";
import { inLockstep, thenJob, type Job } from "./lockstep.js";
import { interleavedOrder, runSequential, type PairedScore, type SequentialRule } from "./sequentialFluency.js";

/**
 * How natural a candidate adapter's OWN answers read to the base model, measured with
 * llama.cpp in the core (the trainer has no KV cache: sampling there is far too slow at real
 * sizes). The publish gate asks it before a candidate is served:
 *
 * 1. the candidate's adapter is loaded in a context of its own and answers a few prompts at the
 *    settings they were served with (temperature, top-p, seeds);
 * 2. the base model (no adapter) scores those answers: their mean log-prob per token, pooled;
 * 3. the base model's own answers to the same prompts with the same seeds are scored the same
 *    way (remembered: they do not change).
 *
 * The base model's answers do not depend on the candidate: `prepare` samples and scores them
 * ahead, while learning waits for samples (the run loop asks for the prompts the gate would pick
 * now), so a cycle's `compare` samples only the candidate's. Ahead work runs a few answers at a
 * time on the probe's chain, gives way at once to `compare` and `score` (the batch in progress is
 * abandoned at its next token), and is dropped when the probe closes (a model switch closes it).
 *
 * This is the eval's fluency measure (electron/core/eval/fluency.ts): a candidate that buys
 * reward with broken language shows as a drop. The watch on the served adapter uses `score` for
 * the answers it actually served.
 *
 * Answers are sampled and scored a few at a time (`parallel` sequences of one context: on a CPU
 * a batch of 4 decodes about twice the tokens per second of one, since each step reads the
 * weights once), as many as fit a small memory budget (the KV cache grows with the model), in
 * lockstep (lockstep.ts): each round every sequence's next step goes to llama.cpp as one batch.
 *
 * It runs on a LlamaModel instance of its own (the GGUF is memory-mapped: a second instance
 * shares the pages) because node-llama-cpp caches every LoRA adapter it loads per file path for
 * the model's lifetime, and every candidate is a new file: the instance is disposed, its
 * adapters with it, after `reloadEvery` candidates, so memory stays bounded. The serving engine
 * and its model are never touched, and the probe waits while chat generates (`busy`), before
 * each answer, between tokens and between prompt chunks: serving never waits for it.
 */
export interface FluencyProbeOptions {
  llama: Llama;
  modelPath: string;
  gpuLayers?: "auto" | "max" | number;
  threads?: number;
  /** context cap in tokens (default 2048, never above the model's trained context) */
  maxContextSize?: number;
  /** True while chat is generating: the probe waits (up to `maxYieldMs` each time). */
  busy?: () => boolean;
  maxYieldMs?: number;
  /** candidates (distinct adapter files) before the model instance is disposed and loaded again (default 4) */
  reloadEvery?: number;
  /**
   * most answers sampled or scored at once (default 4; fewer when their KV cache would pass
   * PARALLEL_BUDGET). 8 fits the budget on the Qwen2.5-0.5B shape (168 MiB over one sequence)
   * but was no faster per answer there on 2 cores (issue 31: 139 vs 141 s for 16 answers, runs
   * alternated in one process on a loaded machine), so 4 stays.
   */
  parallel?: number;
  /** the longest one evaluation of the probe should hold the CPU (default BATCH_MS): what chat's first token may wait for it */
  batchMs?: number;
}

export interface CompareOptions {
  signal?: AbortSignal;
  /**
   * Stop sampling once the verdict against this margin is clear (sequentialFluency.ts); the
   * figures are then over the answers sampled. Absent: every prompt is answered.
   */
  sequential?: SequentialRule;
  /** the fraction of the answers sampled and scored so far */
  onProgress?: (fraction: number) => void;
}

export interface ProbePrompt {
  /** prompt token ids as served */
  tokens: number[];
  temperature: number;
  topP: number;
  /** longest answer sampled */
  maxTokens: number;
  seed: number;
}

export interface FluencySummary {
  /** the base model's mean log-prob per answer token (nats), pooled over the answers; null = no answer token */
  meanLogprob: number | null;
  tokens: number;
  answers: number;
}

export interface FluencyComparison {
  /** the candidate's own answers */
  candidate: FluencySummary;
  /** the base model's own answers to the same prompts and seeds */
  base: FluencySummary;
  seconds: number;
  /** With a sequential rule: whether it stopped before answering every prompt, and how many it would have. */
  stoppedEarly?: boolean;
  planned?: number;
  /** the base model's answers this call sampled itself (the rest were remembered or sampled ahead) */
  baseSampled: number;
  /** each answer's figures in the order sampled: `prompt` indexes the prompts given (bench/fluency-stopping.ts replays rules on them) */
  pairs?: Array<PairedScore & { prompt: number }>;
}

/** What the gate and the watch need (a fake in tests). */
export interface FluencyMeasure {
  /**
   * The base model's own answers to these prompts (as `compare` would sample them), sampled and
   * scored ahead when the probe is otherwise idle; replaces what an earlier call left to do.
   * Returns at once; never throws.
   */
  prepare?(prompts: ProbePrompt[]): void;
  /**
   * Ahead work waits (before it starts, and at its next token or chunk) while `hold()` is true:
   * the trainer's own work comes first. The probe runs in the core at chat's priority and the
   * trainer niced, so beside it the probe would take the CPU from the trainer's start, its
   * anchor pass and its steps, all nearer the next adapter than the base answers the gate needs
   * last. `compare` and `score` never wait for it.
   */
  holdAheadWhile?(hold: () => boolean): void;
  compare(adapterPath: string, prompts: ProbePrompt[], opts?: CompareOptions): Promise<FluencyComparison>;
  /** The base model's mean log-prob per token of each given answer, end-of-generation tokens left out (null: no answer token). */
  score(answers: Array<{ prompt: number[]; response: number[] }>, signal?: AbortSignal): Promise<Array<number | null>>;
  close(): Promise<void>;
}

/** No top-k sampler, as the engine's native path serves (steppers.ts NO_TOP_K). */
const NO_TOP_K = null as unknown as number;
/**
 * The longest one of the probe's evaluations should hold the CPU. The probe runs several
 * sequences at once and their chunks go to llama.cpp as one batch that chat cannot interrupt:
 * chat's first token waits for the batch in flight. 4 × 16 prompt tokens took 350–600 ms on the
 * 0.5B shape on 2 cores, and chat's first token during the probe had a p95 of 2.8–3.8× idle
 * (bench/probe-ttft.ts, issue 31). The chunk per sequence adapts to keep a batch near this
 * (halved above it, doubled below half of it, between 1 and MAX_CHUNK tokens); with one token
 * per sequence the batch is as short as sampling's own (one token per sequence), the floor.
 * Smaller batches cost the probe time: measured there, one candidate of 8 answers took 51.6 s
 * unbounded, 64.8 s at 150 ms (chat's p95 1.56× idle) and 74.0 s at 100 ms (1.52×).
 */
const BATCH_MS = 150;
/** Tokens of prompt (or of an answer scored) per sequence in one evaluation, at most; and where it starts, in all sequences together. */
const MAX_CHUNK = 16;
const START_BATCH_TOKENS = 8;
const BASE_CACHE = 512;
/** Most memory the extra sequences of one probe context may add (their KV cache). */
const PARALLEL_BUDGET = 256 * 2 ** 20;
/**
 * The probe's contexts hold what its prompts and answers need, rounded up to this, not the cap:
 * the KV cache grows with the context, and PARALLEL_BUDGET then fits more sequences. At the cap
 * (2,048) the Qwen3-1.7B shape fit 2 sequences (node-llama-cpp's estimate: 753 MiB for 2, 1,201 for
 * 4, 529 for 1); at 256 or 512, 4. On 2 cores there one candidate's 4 answers took 63.8 s at 4
 * sequences and 76.3 s at 2 (bench/probe-alone.ts, issue 31).
 */
const CONTEXT_STEP = 256;
/** Sampling an answer costs about this many scorings of one (decoding token by token vs one prompt pass). */
const SAMPLE_COST = 3;
/** Most base answers waiting to be sampled ahead (the gate samples 32 at most by default). */
const AHEAD_MAX = 64;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * The seed of the sampler that draws token `position` of an answer sampled with `seed` (a 32-bit
 * mix of both). One seed for every token would draw every token with the same random number; and
 * llama.cpp takes 0xFFFFFFFF for "random", so the result stays below it.
 */
export function tokenSeed(seed: number, position: number): number {
  let h = (seed >>> 0) ^ Math.imul(position + 1, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) >>> 0) % 0xffffffff;
}
/** Context tokens a sequence needs to hold each prompt and its answer whole (and the token `sample` keeps free). */
const contextNeed = (pairs: ReadonlyArray<{ prompt: number; answer: number }>): number => Math.max(0, ...pairs.map((x) => x.prompt + x.answer + 2));
const promptsNeed = (prompts: readonly ProbePrompt[]): number => contextNeed(prompts.map((p) => ({ prompt: p.tokens.length, answer: p.maxTokens })));

/** How many of `prompt`'s first tokens `seq` holds evaluated already. */
const held = (seq: LlamaContextSequence, prompt: readonly number[]): number => seq.compareContextTokens(prompt as Token[]).firstDifferentIndex;

/**
 * Keeps what `seq` holds of `prompt` (all but its last token at most: that one is fed again for
 * the logits after it) and erases the rest; returns how many prompt tokens are kept. The base
 * context's sequences keep the gate's prompts between answers and between candidates (they are
 * mostly the same prompts), and with `held` as the rounds' affinity each prompt goes where it is:
 * its evaluation is not paid again.
 */
async function keepPrefix(seq: LlamaContextSequence, prompt: readonly Token[]): Promise<number> {
  const keep = Math.min(held(seq, prompt), prompt.length - 1);
  if (keep === 0) await seq.clearHistory();
  else if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
  return keep;
}

export class ProbeAbortedError extends Error {
  constructor() {
    super("fluency probe aborted");
    this.name = "ProbeAbortedError";
  }
}

interface Sum {
  sum: number;
  n: number;
}

export class FluencyProbe implements FluencyMeasure {
  private model: LlamaModel | null = null;
  private baseCtx: LlamaContext | null = null;
  private baseSeqs: LlamaContextSequence[] = [];
  /** sequences per context for this model instance, at its context size */
  private width = 1;
  /** tokens per sequence of this instance's contexts (grows to the longest prompt and answer asked; CONTEXT_STEP) */
  private ctxTokens = 0;
  /** prompt or scored-answer tokens per sequence in one evaluation (BATCH_MS); 0: not yet set for this instance */
  private chunk = 0;
  private adaptersLoaded = 0;
  /** the base model's own answer to a prompt at given settings, scored: it never changes */
  private readonly baseAnswers = new Map<string, Sum>();
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** base answers to sample ahead (`prepare`), in the order `compare` would sample them */
  private ahead: Array<{ p: ProbePrompt; key: string }> = [];
  /** an ahead batch is queued or running on the chain; its abort */
  private pumping = false;
  private aheadAbort: AbortController | null = null;
  /** ahead work failed once (the model would not load, say): not tried again on this instance */
  private aheadFailed = false;
  /** `compare` and `score` calls queued or running: ahead work gives way to them */
  private demand = 0;
  /** an ahead batch is the work running on the chain (the chain runs one thing at a time) */
  private inAhead = false;
  /** while true, ahead work waits: the trainer's own work comes first (holdAheadWhile) */
  private aheadHold: () => boolean = () => false;
  /** model instances loaded so far (tests read it) */
  loads = 0;
  /**
   * Answers sampled so far (tests and benches read it): the candidates' and the base model's
   * in `compare`, the base model's ahead (`prepare`); `steps`: evaluations (prompt chunks, tokens,
   * scoring passes), each a point where the probe gives way to chat.
   */
  readonly counts = { candidate: 0, base: 0, ahead: 0, steps: 0 };

  /** prompt or scored-answer tokens per sequence in the probe's next evaluation (tests read it) */
  get chunkTokens(): number {
    return this.chunk;
  }

  /** answers sampled or scored at once on the current model instance (tests read it) */
  get sequences(): number {
    return this.width;
  }

  /** the context size per sequence the probe's contexts have now (tests read it) */
  get contextTokens(): number {
    return this.ctxTokens;
  }

  constructor(private readonly o: FluencyProbeOptions) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** A `compare` or `score`: ahead work in progress stops at its next token, and waits until no request is left. */
  private request<T>(fn: () => Promise<T>): Promise<T> {
    this.demand++;
    this.aheadAbort?.abort();
    return this.serial(fn).finally(() => {
      if (--this.demand === 0) this.pump();
    });
  }

  private get cap(): number {
    return this.o.maxContextSize ?? 2048;
  }

  /**
   * The model instance, and the base context's sequences sized for `need` tokens (prompt and
   * answer): a context too small for it is replaced by a larger one (never a smaller: the next
   * call likely needs as much), with the sequences that fit PARALLEL_BUDGET at that size.
   */
  private async ensureModel(need: number): Promise<{ model: LlamaModel; seqs: LlamaContextSequence[] }> {
    if (this.closed) throw new Error("the fluency probe is closed");
    if (!this.model) {
      // The same check and bound as the serving engine's load (issue 26 F3).
      assertLoadableGguf(this.o.modelPath);
      const modelPath = this.o.modelPath;
      this.model = await loadWithin(
        `the gate's copy of ${modelPath}`,
        loadBoundMs(modelPath),
        (loadSignal) => this.o.llama.loadModel({ modelPath, gpuLayers: this.o.gpuLayers ?? "auto", loadSignal }),
        (late) => late.dispose(),
      );
      this.loads++;
      this.adaptersLoaded = 0;
      this.chunk = 0; // set below for this instance's width (ctxTokens is 0: unload and the constructor leave it so)
    }
    const size = this.contextSize(this.model, need);
    if (size > this.ctxTokens) {
      const old = this.baseCtx;
      this.baseCtx = null;
      this.baseSeqs = [];
      await old?.dispose();
      this.ctxTokens = size;
      this.width = await this.widthFor(this.model, size);
      if (this.chunk === 0) this.chunk = Math.max(1, Math.floor(START_BATCH_TOKENS / this.width));
    }
    if (this.baseSeqs.length === 0) {
      this.baseCtx = await this.newContext(this.model);
      this.baseSeqs = Array.from({ length: this.baseCtx.totalSequences }, () => this.baseCtx!.getSequence());
    }
    return { model: this.model, seqs: this.baseSeqs };
  }

  /** Tokens a sequence needs for `need` prompt and answer tokens: a multiple of CONTEXT_STEP, within the cap and the model's trained context. */
  private contextSize(model: LlamaModel, need: number): number {
    return Math.min(this.cap, model.trainContextSize, Math.ceil(Math.max(1, need) / CONTEXT_STEP) * CONTEXT_STEP);
  }

  /** The most sequences (up to `parallel`) whose extra KV cache at `contextSize` stays within PARALLEL_BUDGET. */
  private async widthFor(model: LlamaModel, contextSize: number): Promise<number> {
    const want = Math.max(1, Math.floor(this.o.parallel ?? 4));
    if (want === 1) return 1;
    try {
      const need = async (sequences: number) => {
        const r = await model.fileInsights.estimateContextResourceRequirementsV2({
          contextSize,
          modelGpuLayers: model.gpuLayers,
          sequences,
        });
        return r.cpuRam + r.gpuVram;
      };
      const one = await need(1);
      for (let n = want; n > 1; n = Math.floor(n / 2)) if ((await need(n)) - one <= PARALLEL_BUDGET) return n;
    } catch {
      // No estimate for this model: one at a time is always safe.
    }
    return 1;
  }

  private async newContext(model: LlamaModel, adapterPath?: string): Promise<LlamaContext> {
    if (adapterPath) assertLoadableGguf(adapterPath); // a candidate adapter passes the app's GGUF check before llama.cpp reads it
    return model.createContext({
      sequences: this.width,
      contextSize: { max: this.ctxTokens },
      threads: this.o.threads,
      ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath }] } } : {}),
    });
  }

  /** Disposes the model instance (and every adapter node-llama-cpp cached on it). */
  private async unload(): Promise<void> {
    const model = this.model;
    const ctx = this.baseCtx;
    this.model = null;
    this.baseCtx = null;
    this.baseSeqs = [];
    this.ctxTokens = 0;
    await ctx?.dispose();
    if (!model) return;
    // The adapters' native memory goes with the model; freed explicitly as well, as the engine does
    // (node-llama-cpp 3.22.1 internals, guarded: absent, the model's disposal frees them).
    const cache = (model as unknown as { _loraAdapters?: Map<string, { dispose?: () => Promise<void> }> })._loraAdapters;
    await model.dispose();
    for (const lora of cache?.values() ?? []) await lora.dispose?.().catch(() => undefined);
    cache?.clear();
  }

  private async yieldToChat(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw new ProbeAbortedError();
    // Ahead work on hold waits with no bound: it is only ahead, and a compare aborts it.
    while (this.inAhead && this.aheadHold() && !signal?.aborted) await sleep(25);
    if (signal?.aborted) throw new ProbeAbortedError();
    const busy = this.o.busy;
    if (!busy) return;
    const until = Date.now() + (this.o.maxYieldMs ?? 5_000);
    while (busy() && Date.now() < until && !signal?.aborted) await sleep(25);
    if (signal?.aborted) throw new ProbeAbortedError();
  }

  /**
   * Runs one chunked evaluation and adapts the chunk to its time: the call's wall time is about
   * the batch it went in (the sequences' chunks are evaluated together), which is what chat waits for.
   * Not when chat was busy at either end: the call may have waited behind chat's own batches
   * (the serving context takes every thread first), and halving on that time would shrink the
   * chunk for no batch of the probe's; on a model where no batch is under half the budget it
   * would never grow back.
   */
  private async timed<T>(evaluate: () => Promise<T>): Promise<T> {
    const chatBefore = this.o.busy?.() ?? false;
    const t0 = performance.now();
    const out = await evaluate();
    const ms = performance.now() - t0;
    if (chatBefore || this.o.busy?.()) return out;
    const budget = this.o.batchMs ?? BATCH_MS;
    if (ms > budget) this.chunk = Math.max(1, Math.floor(this.chunk / 2));
    else if (ms < budget / 2) this.chunk = Math.min(MAX_CHUNK, this.chunk * 2);
    return out;
  }

  /** The end of a prompt that leaves room for `answer` tokens in a context of `size`. */
  private fit(prompt: number[], answer: number, size: number): Token[] {
    const keep = Math.max(1, size - answer - 1);
    return (prompt.length > keep ? prompt.slice(prompt.length - keep) : prompt) as Token[];
  }

  /** Each round of the probe's jobs (inLockstep): chat goes first, and a round that evaluates a chunk tunes the chunk by its time. */
  private rounds(signal?: AbortSignal): (run: () => Promise<void>, chunked: boolean) => Promise<void> {
    return async (run, chunked) => {
      await this.yieldToChat(signal);
      this.counts.steps++;
      if (chunked) await this.timed(run);
      else await run();
    };
  }

  /**
   * One sampled answer (its tokens, end-of-generation token excluded): the prompt in chunks, the
   * last chunk asking for the first token, then a token a step. Each token is drawn by a sampler of
   * its own, seeded from the prompt's seed and the token's position (tokenSeed), so the candidate's
   * and the base model's answers to one prompt share their random draws as they did with one seed.
   */
  private async *sampleJob(model: LlamaModel, seq: LlamaContextSequence, p: ProbePrompt): Job<Token[]> {
    const maxTokens = Math.max(1, Math.min(p.maxTokens, seq.contextSize - 2));
    // From a clear sequence, unlike scoring: a sampled token can turn on the last bits of the
    // logits, and a prompt evaluated in other chunks would change them (a base answer sampled
    // ahead would then differ from the one compare samples).
    let pending = this.fit(p.tokens, maxTokens, seq.contextSize);
    await seq.clearHistory();
    const out: Token[] = [];
    for (;;) {
      yield pending.length > 1 ? "chunk" : "token";
      if (pending.length > this.chunk) {
        await seq.evaluateWithoutGeneratingNewTokens(pending.slice(0, this.chunk));
        pending = pending.slice(this.chunk);
        continue;
      }
      const options = { temperature: p.temperature, topP: p.topP, topK: NO_TOP_K, minP: 0, seed: tokenSeed(p.seed, out.length) };
      const last = pending.length - 1;
      const r = await seq.controlledEvaluate(pending.map((t, i) => (i === last ? [t, { generateNext: { token: true, options } }] : t)));
      const t = r[last]?.next?.token;
      if (t === undefined || t === null || model.isEogToken(t)) return out;
      out.push(t);
      if (out.length >= maxTokens || seq.nextTokenIndex + 1 >= seq.contextSize) return out;
      pending = [t];
    }
  }

  /** Sum and count of the base model's log-probs of `answer` after `prompt`, a chunk a step. */
  private async *scoreJob(seq: LlamaContextSequence, promptTokens: number[], answer: number[]): Job<Sum> {
    if (answer.length === 0 || promptTokens.length === 0) return { sum: 0, n: 0 };
    const resp = answer.slice(0, Math.max(1, seq.contextSize - 2)) as Token[];
    const prompt = this.fit(promptTokens, resp.length, seq.contextSize);
    const head = prompt.slice(0, -1);
    for (let at = await keepPrefix(seq, prompt); at < head.length;) {
      yield "chunk";
      const n = this.chunk;
      await seq.evaluateWithoutGeneratingNewTokens(head.slice(at, at + n));
      at += n;
    }
    // The last prompt token and every answer token but the last: each predicts the next answer token.
    const feed = [prompt[prompt.length - 1], ...resp.slice(0, -1)];
    let sum = 0;
    for (let at = 0; at < resp.length;) {
      yield "chunk";
      const n = this.chunk;
      for (const lp of await targetLogprobs(seq, feed.slice(at, at + n), resp.slice(at, at + n))) sum += lp;
      at += n;
    }
    return { sum, n: resp.length };
  }

  private baseKey(p: ProbePrompt): string {
    return createHash("sha256")
      .update(JSON.stringify([p.tokens, p.temperature, p.topP, p.maxTokens, p.seed]))
      .digest("hex");
  }

  /** Remembers the base model's scored answer to a prompt (the oldest go past BASE_CACHE). */
  private remember(key: string, s: Sum): void {
    this.baseAnswers.set(key, s);
    if (this.baseAnswers.size > BASE_CACHE) this.baseAnswers.delete(this.baseAnswers.keys().next().value!);
  }

  prepare(prompts: ProbePrompt[]): void {
    if (this.closed || this.aheadFailed) return;
    const seen = new Set<string>();
    const next: Array<{ p: ProbePrompt; key: string }> = [];
    // compare's order (each prompt once before any twice): with the sequential rule its first rounds are the ones always sampled.
    for (const i of interleavedOrder(prompts.map((p) => p.tokens.join(",")))) {
      const key = this.baseKey(prompts[i]);
      if (seen.has(key) || this.baseAnswers.has(key)) continue;
      seen.add(key);
      next.push({ p: prompts[i], key });
    }
    this.ahead = next.slice(0, AHEAD_MAX);
    this.pump();
  }

  holdAheadWhile(hold: () => boolean): void {
    this.aheadHold = hold;
  }

  /** Resolves once nothing is left to sample ahead (tests, benches). */
  async prepared(): Promise<void> {
    while (this.pumping) await this.chain;
  }

  /** Queues the next ahead batch on the chain when there is one and no request waits. */
  private pump(): void {
    if (this.pumping || this.closed || this.demand > 0 || this.ahead.length === 0) return;
    this.pumping = true;
    const ctrl = new AbortController();
    this.aheadAbort = ctrl;
    void this.serial(() => this.aheadBatch(ctrl.signal))
      .catch((e: unknown) => {
        if (e instanceof ProbeAbortedError) return;
        // Not tried again (it would fail the same way): the gate's compare samples what is missing, or says why it cannot.
        this.aheadFailed = true;
        this.ahead = [];
        console.warn(`fluency probe: sampling the base model's answers ahead failed: ${(e as Error).message.split("\n")[0]}`);
      })
      .finally(() => {
        if (this.aheadAbort === ctrl) this.aheadAbort = null;
        this.pumping = false;
        this.pump();
      });
  }

  /** Samples and scores the next few base answers waiting (as many as two rounds of the sequences), then returns. */
  private async aheadBatch(signal: AbortSignal): Promise<void> {
    this.ahead = this.ahead.filter((x) => !this.baseAnswers.has(x.key));
    if (signal.aborted || this.closed || this.demand > 0 || this.ahead.length === 0) return;
    this.inAhead = true;
    try {
      await this.aheadBatchOn(signal);
    } finally {
      this.inAhead = false;
    }
  }

  private async aheadBatchOn(signal: AbortSignal): Promise<void> {
    await this.yieldToChat(signal); // on hold: not even the model loads
    // Sized for every prompt waiting (the gate's next compare asks the same), so the context is made once.
    const { model, seqs } = await this.ensureModel(promptsNeed(this.ahead.map((x) => x.p)));
    const items = this.ahead.slice(0, 2 * seqs.length);
    const rounds = this.rounds(signal);
    const own = await inLockstep(items, seqs, (seq, x) => thenJob(this.sampleJob(model, seq, x.p), () => this.counts.ahead++), rounds);
    const scores = await inLockstep(
      items.map((x, j) => ({ p: x.p, answer: own[j] })),
      seqs,
      (seq, x) => this.scoreJob(seq, x.p.tokens, x.answer),
      rounds,
      (seq, x) => held(seq, x.p.tokens),
    );
    items.forEach((x, j) => this.remember(x.key, scores[j]));
    this.ahead = this.ahead.filter((x) => !this.baseAnswers.has(x.key));
  }

  compare(adapterPath: string, prompts: ProbePrompt[], opts: CompareOptions = {}): Promise<FluencyComparison> {
    const { signal, onProgress } = opts;
    // A candidate to judge: what was left to sample ahead is this compare's to do now (what it needs of it).
    this.ahead = [];
    return this.request(async () => {
      const t0 = performance.now();
      const base0 = this.counts.base;
      const { model, seqs: baseSeqs } = await this.ensureModel(promptsNeed(prompts));
      // The base model's own answers are remembered: only the prompts it has not answered yet are sampled.
      const keys = prompts.map((p) => this.baseKey(p));
      const work = (prompts.length + new Set(keys.filter((k) => !this.baseAnswers.has(k))).size) * (SAMPLE_COST + 1);
      let done = 0;
      const did = (units: number) => {
        done += units;
        onProgress?.(Math.min(1, done / Math.max(1, work)));
      };
      const rounds = this.rounds(signal);
      const sampleOn = (whose: "candidate" | "base") => (seq: LlamaContextSequence, p: ProbePrompt) =>
        thenJob(this.sampleJob(model, seq, p), () => {
          this.counts[whose]++;
          did(SAMPLE_COST);
        });
      // One round: the candidate's answers to prompts[idx], the base model's own where not remembered, all scored by it.
      const round = async (idx: number[]): Promise<PairedScore[]> => {
        let answers: Token[][];
        let ctx: LlamaContext | null = null;
        try {
          ctx = await this.newContext(model, adapterPath);
          const seqs = Array.from({ length: ctx.totalSequences }, () => ctx!.getSequence());
          answers = await inLockstep(
            idx.map((i) => prompts[i]),
            seqs,
            sampleOn("candidate"),
            rounds,
          );
        } finally {
          await ctx?.dispose();
        }
        const todo = idx.filter((i, j) => !this.baseAnswers.has(keys[i]) && idx.findIndex((x) => keys[x] === keys[i]) === j);
        const own = await inLockstep(
          todo.map((i) => prompts[i]),
          baseSeqs,
          sampleOn("base"),
          rounds,
        );
        const toScore = [...idx.map((i, j) => ({ p: prompts[i], answer: answers[j] })), ...todo.map((i, j) => ({ p: prompts[i], answer: own[j] }))];
        const scores = await inLockstep(
          toScore,
          baseSeqs,
          (seq, x) => thenJob(this.scoreJob(seq, x.p.tokens, x.answer), () => did(1)),
          rounds,
          (seq, x) => held(seq, x.p.tokens),
        );
        const fresh = new Map(todo.map((i, j) => [keys[i], scores[idx.length + j]] as const));
        for (const [k, v] of fresh) this.remember(k, v);
        return idx.map((i, j) => ({ cand: scores[j], base: fresh.get(keys[i]) ?? this.baseAnswers.get(keys[i])! }));
      };
      this.adaptersLoaded++;
      try {
        // 1-3 in rounds; with a sequential rule the rounds stop once the verdict is clear (sequentialFluency.ts).
        const run = await runSequential(interleavedOrder(prompts.map((p) => p.tokens.join(","))), opts.sequential, round);
        if (run.stoppedEarly) onProgress?.(1);
        const pool = (xs: Sum[]): Sum => xs.reduce((a, x) => ({ sum: a.sum + x.sum, n: a.n + x.n }), { sum: 0, n: 0 });
        const summary = (s: Sum, n: number): FluencySummary => ({ meanLogprob: s.n > 0 ? s.sum / s.n : null, tokens: s.n, answers: n });
        const n = run.ran.length;
        return {
          candidate: summary(pool(run.pairs.map((x) => x.cand)), n),
          base: summary(pool(run.pairs.map((x) => x.base)), n),
          seconds: (performance.now() - t0) / 1000,
          baseSampled: this.counts.base - base0,
          pairs: run.pairs.map((x, j) => ({ ...x, prompt: run.ran[j] })),
          ...(opts.sequential ? { stoppedEarly: run.stoppedEarly, planned: prompts.length } : {}),
        };
      } finally {
        if (this.adaptersLoaded >= (this.o.reloadEvery ?? 4)) await this.unload();
      }
    });
  }

  score(answers: Array<{ prompt: number[]; response: number[] }>, signal?: AbortSignal): Promise<Array<number | null>> {
    return this.request(async () => {
      const { model, seqs } = await this.ensureModel(contextNeed(answers.map((a) => ({ prompt: a.prompt.length, answer: a.response.length }))));
      const sums = await inLockstep(
        answers,
        seqs,
        (seq, a) =>
          this.scoreJob(
            seq,
            a.prompt,
            a.response.filter((t) => !model.isEogToken(t as Token)),
          ),
        this.rounds(signal),
        (seq, a) => held(seq, a.prompt),
      );
      return sums.map((s) => (s.n > 0 ? s.sum / s.n : null));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.ahead = [];
    this.aheadAbort?.abort();
    await this.prepared();
    await this.chain;
    await this.unload();
  }
}
