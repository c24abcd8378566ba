import { createHash } from "node:crypto";
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { targetLogprobs } from "./tokenProbability.js";

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
 * This is the eval's fluency measure (electron/core/eval/fluency.ts): a candidate that buys
 * reward with broken language shows as a drop. The watch on the served adapter uses `score` for
 * the answers it actually served.
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
}

/** What the gate and the watch need (a fake in tests). */
export interface FluencyMeasure {
  compare(adapterPath: string, prompts: ProbePrompt[], signal?: AbortSignal): Promise<FluencyComparison>;
  /** The base model's mean log-prob per token of each given answer, end-of-generation tokens left out (null: no answer token). */
  score(answers: Array<{ prompt: number[]; response: number[] }>, signal?: AbortSignal): Promise<Array<number | null>>;
  close(): Promise<void>;
}

/** No top-k sampler, as the engine's native path serves (steppers.ts NO_TOP_K). */
const NO_TOP_K = null as unknown as number;
const PROMPT_CHUNK = 64;
const BASE_CACHE = 512;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  private baseSeq: LlamaContextSequence | null = null;
  private adaptersLoaded = 0;
  /** the base model's own answer to a prompt at given settings, scored: it never changes */
  private readonly baseAnswers = new Map<string, Sum>();
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** model instances loaded so far (tests read it) */
  loads = 0;

  constructor(private readonly o: FluencyProbeOptions) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private get cap(): number {
    return this.o.maxContextSize ?? 2048;
  }

  private async ensureModel(): Promise<{ model: LlamaModel; seq: LlamaContextSequence }> {
    if (this.closed) throw new Error("the fluency probe is closed");
    if (!this.model) {
      this.model = await this.o.llama.loadModel({ modelPath: this.o.modelPath, gpuLayers: this.o.gpuLayers ?? "auto" });
      this.loads++;
      this.adaptersLoaded = 0;
    }
    if (!this.baseSeq) {
      this.baseCtx = await this.model.createContext({ sequences: 1, contextSize: { max: Math.min(this.cap, this.model.trainContextSize) }, threads: this.o.threads });
      this.baseSeq = this.baseCtx.getSequence();
    }
    return { model: this.model, seq: this.baseSeq };
  }

  /** Disposes the model instance (and every adapter node-llama-cpp cached on it). */
  private async unload(): Promise<void> {
    const model = this.model;
    const ctx = this.baseCtx;
    this.model = null;
    this.baseCtx = null;
    this.baseSeq = null;
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
    const busy = this.o.busy;
    if (!busy) return;
    const until = Date.now() + (this.o.maxYieldMs ?? 5_000);
    while (busy() && Date.now() < until && !signal?.aborted) await sleep(25);
    if (signal?.aborted) throw new ProbeAbortedError();
  }

  /** The end of a prompt that leaves room for `answer` tokens in a context of `size`. */
  private fit(prompt: number[], answer: number, size: number): Token[] {
    const keep = Math.max(1, size - answer - 1);
    return (prompt.length > keep ? prompt.slice(prompt.length - keep) : prompt) as Token[];
  }

  /** Evaluates all but the last prompt token in chunks, chat going first between them. */
  private async feedPrompt(seq: LlamaContextSequence, prompt: Token[], signal?: AbortSignal): Promise<void> {
    await seq.clearHistory();
    const head = prompt.slice(0, -1);
    for (let at = 0; at < head.length; at += PROMPT_CHUNK) {
      await this.yieldToChat(signal);
      await seq.evaluateWithoutGeneratingNewTokens(head.slice(at, at + PROMPT_CHUNK));
    }
  }

  /** One sampled answer (its tokens, end-of-generation token excluded). */
  private async sample(model: LlamaModel, seq: LlamaContextSequence, p: ProbePrompt, signal?: AbortSignal): Promise<Token[]> {
    const maxTokens = Math.max(1, Math.min(p.maxTokens, seq.contextSize - 2));
    const prompt = this.fit(p.tokens, maxTokens, seq.contextSize);
    await this.feedPrompt(seq, prompt, signal);
    await this.yieldToChat(signal);
    const out: Token[] = [];
    const it = seq.evaluate(prompt.slice(-1), { temperature: p.temperature, topP: p.topP, topK: NO_TOP_K, minP: 0, seed: p.seed });
    try {
      for await (const t of it) {
        if (model.isEogToken(t)) break;
        out.push(t);
        if (out.length >= maxTokens || seq.nextTokenIndex + 1 >= seq.contextSize) break;
        if (this.o.busy?.() || signal?.aborted) await this.yieldToChat(signal);
      }
    } finally {
      await it.return();
    }
    return out;
  }

  /** Sum and count of the base model's log-probs of `answer` after `prompt`. */
  private async scoreOn(seq: LlamaContextSequence, promptTokens: number[], answer: number[], signal?: AbortSignal): Promise<Sum> {
    if (answer.length === 0 || promptTokens.length === 0) return { sum: 0, n: 0 };
    const resp = answer.slice(0, Math.max(1, seq.contextSize - 2)) as Token[];
    const prompt = this.fit(promptTokens, resp.length, seq.contextSize);
    await this.feedPrompt(seq, prompt, signal);
    await this.yieldToChat(signal);
    // The last prompt token and every answer token but the last: each predicts the next answer token.
    const lps = await targetLogprobs(seq, [prompt[prompt.length - 1], ...resp.slice(0, -1)], resp);
    return { sum: lps.reduce((a, b) => a + b, 0), n: resp.length };
  }

  private baseKey(p: ProbePrompt): string {
    return createHash("sha256").update(JSON.stringify([p.tokens, p.temperature, p.topP, p.maxTokens, p.seed])).digest("hex");
  }

  compare(adapterPath: string, prompts: ProbePrompt[], signal?: AbortSignal): Promise<FluencyComparison> {
    return this.serial(async () => {
      const t0 = performance.now();
      const { model, seq: baseSeq } = await this.ensureModel();
      const cand: Sum = { sum: 0, n: 0 };
      const base: Sum = { sum: 0, n: 0 };
      let candAnswers = 0;
      let ctx: LlamaContext | null = null;
      try {
        this.adaptersLoaded++;
        ctx = await model.createContext({ sequences: 1, contextSize: { max: Math.min(this.cap, model.trainContextSize) }, threads: this.o.threads, lora: { adapters: [{ filePath: adapterPath }] } });
        const seq = ctx.getSequence();
        for (const p of prompts) {
          const answer = await this.sample(model, seq, p, signal);
          const s = await this.scoreOn(baseSeq, p.tokens, answer, signal);
          cand.sum += s.sum;
          cand.n += s.n;
          candAnswers++;
          const key = this.baseKey(p);
          let b = this.baseAnswers.get(key);
          if (!b) {
            const own = await this.sample(model, baseSeq, p, signal);
            b = await this.scoreOn(baseSeq, p.tokens, own, signal);
            this.baseAnswers.set(key, b);
            if (this.baseAnswers.size > BASE_CACHE) this.baseAnswers.delete(this.baseAnswers.keys().next().value!);
          }
          base.sum += b.sum;
          base.n += b.n;
        }
      } finally {
        await ctx?.dispose();
        if (this.adaptersLoaded >= (this.o.reloadEvery ?? 4)) await this.unload();
      }
      const summary = (s: Sum, answers: number): FluencySummary => ({ meanLogprob: s.n > 0 ? s.sum / s.n : null, tokens: s.n, answers });
      return { candidate: summary(cand, candAnswers), base: summary(base, prompts.length), seconds: (performance.now() - t0) / 1000 };
    });
  }

  score(answers: Array<{ prompt: number[]; response: number[] }>, signal?: AbortSignal): Promise<Array<number | null>> {
    return this.serial(async () => {
      const { model, seq } = await this.ensureModel();
      const out: Array<number | null> = [];
      for (const a of answers) {
        const s = await this.scoreOn(seq, a.prompt, a.response.filter((t) => !model.isEogToken(t as Token)), signal);
        out.push(s.n > 0 ? s.sum / s.n : null);
      }
      return out;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
    await this.unload();
  }
}
