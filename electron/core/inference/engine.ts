import path from "node:path";
import {
  LlamaGrammarEvaluationState,
  resolveChatWrapper,
  TokenBias,
  type ChatWrapper,
  type Llama,
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import type { ChatMessage } from "../api/chatTypes.js";
import type { AnswerTimingsView } from "../api/sessions.js";
import { AdapterGate, AbortedError, type SwapResult } from "./adapterGate.js";
import type { BackendName, BackendPreference } from "./backend.js";
import { chooseBackend, type BackendSkip, type ProbeOptions } from "./backendProbe.js";
import { renderPrompt, type FunctionTool } from "./chatPrompt.js";
import { assertLoadableGguf } from "../../../models/gguf/loadable.js";
import { loadBoundMs, loadWithin } from "./loadBound.js";
import { IncrementalDetokenizer } from "./detokenizer.js";
import { JsonObjectPrefix } from "./jsonPrefix.js";
import { GrammarMatcher } from "./grammarMatcher.js";
import { closingReserve, jsonSchemaGrammar } from "./jsonSchemaGrammar.js";
import { createRng, type SamplingAdjustments } from "./sampling.js";
import { GreedyStepper, LogitsStepper, NativeStepper, type NativeSamplerExtras, type Stepper } from "./steppers.js";
import { defaultThreads } from "./threads.js";
import { hasExactTokenProbability, installExactTokenProbability, targetLogprobs } from "./tokenProbability.js";
import { jsonValueEnd, parseAnswer, toolCallSyntax, type ToolCallSyntax } from "./toolCalls.js";

export { AbortedError } from "./adapterGate.js";
export type { SwapResult } from "./adapterGate.js";

export interface EngineOptions {
  modelPath: string;
  /** auto = CUDA, then Vulkan, then CPU; a named GPU backend falls back to the CPU (backendProbe.ts). */
  backend?: BackendPreference;
  /** How GPU backends are proven before use: where verdicts are remembered, time limits. */
  probe?: ProbeOptions;
  /** Layers to offload to the GPU; default "auto" (as many as fit). */
  gpuLayers?: "auto" | "max" | number;
  /** Upper bound on the context size; default: the model's trained context (fitted to memory). */
  maxContextSize?: number;
  /** Conversations served at once (sequences in the context); more wait in a FIFO queue. Default 4. */
  sequences?: number;
  /** Bounded wait for in-flight generations at an adapter swap (ms). */
  drainTimeoutMs?: number;
  /** Adapter to start with. */
  adapter?: { path: string; version: string };
  /** CPU threads per evaluation; default: one for a small model (threads.ts), else node-llama-cpp's (all math cores). */
  threads?: number;
  /** Told how much of the model's weights are loaded (0 to 1), for a progress bar. */
  onLoadProgress?: (fraction: number) => void;
}

export interface EngineInfo {
  modelId: string;
  modelPath: string;
  backend: BackendName;
  /** Backends tried before the serving one, and why each was not used. */
  backendSkipped: BackendSkip[];
  /** GPU devices the backend runs on (from its probe); empty on the CPU. */
  devices: string[];
  gpuLayers: number;
  contextSize: number;
  trainContextSize: number;
  sequences: number;
  adapter: string;
  chatWrapper: string;
}

export type ToolChoice = "auto" | "none" | "required" | { name: string };

export interface GenerateRequest {
  messages: ChatMessage[];
  tools?: FunctionTool[];
  toolChoice?: ToolChoice;
  /** Default 1. 0 = greedy. */
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string[];
  seed?: number;
  /** Alternatives per token to report (0–20); tokens' own log-probs are always computed. */
  topLogprobs?: number;
  /**
   * The answer continues the prompt's text (a plain completion): its text reads as it does
   * after the prompt, so prompt + text is the whole text (a SentencePiece model's word-start
   * space on the first token is kept; a chat answer drops it).
   */
  continuesPrompt?: boolean;
  /**
   * Holds the answer to this grammar while it is decoded (response_format: jsonSchemaGrammar.ts);
   * the answer ends where its JSON value does.
   */
  grammar?: LlamaGrammar;
  /** Tokens kept back from max_tokens for the JSON to close in (closingReserve); default 16. */
  grammarReserve?: number;
  /** OpenAI's penalties (−2 to 2) over the answer's last 64 tokens, as llama.cpp applies them. */
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** llama.cpp's repeat penalty (1 = off) over the same tokens. */
  repeatPenalty?: number;
  /** 0 = off. */
  topK?: number;
  /** 0 = off. */
  minP?: number;
  /** token id → added to its logit (OpenAI's logit_bias); −100 or less bans the token. */
  logitBias?: Record<number, number>;
  /** Several calls in one answer when a call is forced (default true, as OpenAI's parallel_tool_calls). */
  parallelToolCalls?: boolean;
}

/** What a turn records of how its answer was sampled (beyond the defaults, only what was set). */
export interface SamplingUsed {
  temperature: number;
  topP: number;
  seed?: number;
  maxTokens?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  repeatPenalty?: number;
  topK?: number;
  minP?: number;
  logitBias?: Record<number, number>;
  /** "json_object" / "json_schema": the answer was held to a grammar */
  grammar?: boolean;
}

/** The answer's tokens penalties look back over (llama.cpp's default penalty_last_n). */
const PENALTY_LAST_N = 64;
/** A logit bias at or below this bans the token (OpenAI: "-100 should result in a ban"). */
const BAN_AT = -100;

export interface TokenLogprob {
  token: number;
  text: string;
  logprob: number;
  top: Array<{ token: number; text: string; logprob: number }>;
}

export interface GeneratedToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type GenerateEvent =
  | { type: "content"; text: string; logprobs: TokenLogprob[] }
  | { type: "toolCall"; index: number; id: string; name: string }
  | { type: "toolArguments"; index: number; text: string };

export interface GenerateHooks {
  signal?: AbortSignal;
  /** Called once a sequence is assigned, before the first token (headers can go out then). */
  onStart?(info: { adapter: string; promptTokens: number }): void;
  onEvent?(event: GenerateEvent): void;
}

export interface GenerateResult {
  model: string;
  adapter: string;
  promptTokens: number[];
  /** Prompt tokens whose KV cache was reused from the sequence's previous request (not evaluated again). */
  cachedPromptTokens: number;
  responseTokens: number[];
  /** log p(token) at temperature 1 under the serving policy, one per response token. */
  tokenLogprobs: number[];
  logprobs: TokenLogprob[];
  text: string;
  toolCalls: GeneratedToolCall[];
  finishReason: "stop" | "length" | "tool_calls";
  sampling: SamplingUsed;
  timings: AnswerTimingsView;
}

export class ContextLengthError extends Error {
  constructor(
    readonly promptTokens: number,
    readonly contextSize: number,
  ) {
    super(`This model's context is ${contextSize} tokens; the prompt has ${promptTokens} tokens (no room for an answer).`);
    this.name = "ContextLengthError";
  }
}

function callId(): string {
  return `call_${Math.random().toString(36).slice(2, 12)}${Math.random().toString(36).slice(2, 8)}`;
}

function partialTail(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) if (text.endsWith(marker.slice(0, n))) return n;
  return 0;
}

/** Frees a LoRA adapter that node-llama-cpp caches per model forever (see adapterGate.ts). */
async function releaseCachedAdapter(model: LlamaModel, filePath: string): Promise<void> {
  // node-llama-cpp 3.22.1 keeps `_loraAdapters: Map<resolvedPath, AddonModelLora>` and never
  // prunes it; its entries have a native `dispose()` that frees the adapter. Internal API,
  // pinned by the exact version in package.json and proven by test/inference/adapterMemory.test.ts.
  const cache = (model as unknown as { _loraAdapters?: Map<string, { dispose?: () => Promise<void> }> })._loraAdapters;
  const key = path.resolve(process.cwd(), filePath);
  const lora = cache?.get(key);
  if (!cache || !lora) return;
  cache.delete(key);
  await lora.dispose?.();
}

/** Loads a GGUF and serves chat generations from a pool of sequences, with adapter hot-swap. */
export class Engine {
  private readonly tokenTexts = new Map<number, string>();
  private readonly specialTokens = new Map<number, boolean>();
  private closers: { quote: number[]; bracket: number[] } | null = null;
  private brokenUtf8: number[] | null = null;
  readonly syntax: ToolCallSyntax;
  readonly modelId: string;

  private constructor(
    readonly llama: Llama,
    readonly model: LlamaModel,
    readonly backend: BackendName,
    readonly wrapper: ChatWrapper,
    readonly gate: AdapterGate,
    private readonly opts: EngineOptions,
    readonly backendSkipped: BackendSkip[] = [],
    readonly devices: string[] = [],
  ) {
    this.syntax = toolCallSyntax(wrapper);
    this.modelId = path.basename(opts.modelPath).replace(/\.gguf$/i, "");
  }

  static async load(opts: EngineOptions): Promise<Engine> {
    const sequences = opts.sequences ?? 4;
    const gpuLayers = opts.gpuLayers ?? "auto";
    // Security (issue 26 F3): the file passes the app's own GGUF reader before any backend probe or llama.cpp reads it.
    assertLoadableGguf(opts.modelPath);
    const chosen = await chooseBackend(
      opts.backend ?? "auto",
      { modelPath: opts.modelPath, gpuLayers },
      async (llama) => {
        let model: LlamaModel;
        try {
          model = await loadWithin(
            `model ${opts.modelPath}`,
            loadBoundMs(opts.modelPath),
            (loadSignal) => llama.loadModel({ modelPath: opts.modelPath, gpuLayers, onLoadProgress: opts.onLoadProgress, loadSignal }),
            (late) => late.dispose(),
          );
        } catch (err) {
          throw new Error(`cannot load model ${opts.modelPath}: ${(err as Error).message}`);
        }
        const threads = opts.threads ?? defaultThreads(model.size);
        const maxCtx = Math.min(opts.maxContextSize ?? model.trainContextSize, model.trainContextSize);
        const gate = new AdapterGate({
          createContext: async (adapterPath) => {
            const context = await model.createContext({
              sequences,
              contextSize: { max: maxCtx },
              threads,
              lora: adapterPath ? { adapters: [{ filePath: adapterPath }] } : undefined,
            });
            installExactTokenProbability(context, model);
            return context;
          },
          releaseAdapter: (p) => releaseCachedAdapter(model, p),
          drainTimeoutMs: opts.drainTimeoutMs,
        });
        try {
          await gate.init(opts.adapter?.path ?? null, opts.adapter?.version ?? "base");
        } catch (err) {
          await model.dispose();
          throw err;
        }
        return { model, gate };
      },
      opts.probe,
    );
    const { model, gate } = chosen.loaded;
    const wrapper = resolveChatWrapper(model);
    return new Engine(chosen.llama, model, chosen.backend, wrapper, gate, opts, chosen.skipped, chosen.probe?.devices ?? []);
  }

  info(): EngineInfo {
    return {
      modelId: this.modelId,
      modelPath: this.opts.modelPath,
      backend: this.backend,
      backendSkipped: this.backendSkipped,
      devices: this.devices,
      gpuLayers: this.model.gpuLayers,
      contextSize: this.gate.contextSize,
      trainContextSize: this.model.trainContextSize,
      sequences: this.opts.sequences ?? 4,
      adapter: this.gate.adapterVersion,
      chatWrapper: this.wrapper.wrapperName,
    };
  }

  swapAdapter(adapterPath: string | null, version: string): Promise<SwapResult> {
    return this.gate.swapAdapter(adapterPath, version);
  }

  tokenText(token: number): string {
    let t = this.tokenTexts.get(token);
    if (t === undefined) {
      t = this.model.detokenize([token as Token], true);
      this.tokenTexts.set(token, t);
    }
    return t;
  }

  /** Tokens in the model's vocabulary; null when the file does not list them. */
  get vocabSize(): number | null {
    const tokens = (this.model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: readonly string[] } } }).tokenizer?.ggml?.tokens;
    return tokens ? tokens.length : null;
  }

  /**
   * Tokens that only close JSON: favoured once an answer held to a grammar nears its budget, so
   * that a model that would write one string forever still closes its JSON in time (the grammar
   * keeps to those it allows where they are). `quote`: they start by closing a string;
   * `bracket`: they close an object or array (inside a string they would only be more text).
   */
  closingTokens(): { quote: number[]; bracket: number[] } {
    if (this.closers) return this.closers;
    const out = { quote: [] as number[], bracket: [] as number[] };
    const n = this.vocabSize ?? 0;
    for (let t = 0; t < n; t++) {
      if (this.model.isEogToken(t as Token) || this.isSpecialToken(t)) continue;
      const text = this.tokenText(t);
      if (/^"[\s\]}]*$/.test(text)) out.quote.push(t);
      else if (/^\s*[\]}][\s\]}]*$/.test(text)) out.bracket.push(t);
    }
    this.closers = out;
    return out;
  }

  /**
   * Tokens that cannot be part of valid UTF-8 in a grammar's answer: a byte no UTF-8 holds (C0,
   * C1, F5-FF), an overlong, surrogate or out-of-range start (E0 80-9F, ED A0-BF, F0 80-8F, F4
   * 90-BF), or a token that ends on the lead byte of one of those checks (E0, ED, F0, F4), so
   * that its next byte could not be checked. llama.cpp's grammar counts such bytes as characters,
   * and they reach the client as U+FFFD: a string past its maxLength. A byte-level BPE model
   * learned whole characters there, so nothing it writes is lost.
   */
  brokenUtf8Tokens(): number[] {
    if (this.brokenUtf8) return this.brokenUtf8;
    const out: number[] = [];
    const meta = (this.model.fileInfo.metadata as { tokenizer?: { ggml?: { model?: string; tokens?: readonly string[] } } }).tokenizer?.ggml;
    const kind = meta?.model;
    const fromUnicode = kind === "gpt2" ? gpt2UnicodeToByte() : null;
    for (const [t, piece] of (meta?.tokens ?? []).entries()) {
      let bytes: number[] | null = null;
      if (fromUnicode) {
        bytes = [];
        for (const ch of piece) {
          const b = fromUnicode.get(ch);
          if (b === undefined) {
            bytes = null; // a special token's text
            break;
          }
          bytes.push(b);
        }
      } else if (kind === "llama") {
        const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
        if (m) bytes = [parseInt(m[1], 16)];
      }
      if (bytes && brokenUtf8(bytes)) out.push(t);
    }
    this.brokenUtf8 = out;
    return out;
  }

  /** True for control tokens (their text only appears when special tokens are rendered). */
  isSpecialToken(token: number): boolean {
    let special = this.specialTokens.get(token);
    if (special === undefined) {
      special = this.model.detokenize([token as Token], false) !== this.tokenText(token);
      this.specialTokens.set(token, special);
    }
    return special;
  }

  /** Renders the prompt and checks it fits (throws ContextLengthError). */
  renderPrompt(req: GenerateRequest): { tokens: Token[]; stopTriggers: string[] } {
    const useTools = req.tools && req.tools.length > 0 && req.toolChoice !== "none";
    const rendered = renderPrompt(this.model, this.wrapper, req.messages, useTools ? req.tools : undefined);
    if (rendered.tokens.length >= this.gate.contextSize) throw new ContextLengthError(rendered.tokens.length, this.gate.contextSize);
    return rendered;
  }

  /** `prepared`: the result of renderPrompt(req) when the caller already has it. */
  async generate(req: GenerateRequest, hooks: GenerateHooks = {}, prepared?: { tokens: Token[]; stopTriggers: string[] }): Promise<GenerateResult> {
    const rendered = prepared ?? this.renderPrompt(req);
    // Only a request with tools waits for grammars: anything else queues for its sequence at once (FIFO order is the call order).
    const withTools = !!req.tools?.length && req.toolChoice !== "none";
    const toolGrammars = withTools ? await this.toolGrammars(req) : new Map<string, { grammar: LlamaGrammar; reserve: number }>();
    const queued = performance.now();
    const lease = await this.gate.acquire(rendered.tokens, hooks.signal);
    try {
      hooks.onStart?.({ adapter: lease.adapterVersion, promptTokens: rendered.tokens.length });
      return await this.run(lease.sequence, lease.adapterVersion, rendered, req, hooks, queued, toolGrammars);
    } finally {
      lease.release();
    }
  }

  /** Grammars for the tools' parameters (a keyword no grammar expresses is left unenforced: the tool worked before). */
  private async toolGrammars(req: GenerateRequest): Promise<Map<string, { grammar: LlamaGrammar; reserve: number }>> {
    const out = new Map<string, { grammar: LlamaGrammar; reserve: number }>();
    if (!req.tools) return out;
    for (const t of req.tools) {
      if (typeof req.toolChoice === "object" && req.toolChoice.name !== t.name) continue;
      if (!t.parameters) continue;
      try {
        out.set(t.name, { grammar: await jsonSchemaGrammar(this.llama, t.parameters, { lenient: true }), reserve: closingReserve(t.parameters) });
      } catch {
        // No grammar (a schema llama.cpp refuses): the call keeps the any-JSON-object constraint.
      }
    }
    return out;
  }

  /**
   * Log-probs of each token after the first given the ones before it, under the serving adapter
   * (temperature 1, no sampling): what OpenAI's legacy `echo` + `logprobs` returns, and what an
   * eval needs to measure how likely a text is. `logprobs[i]` is log p(tokens[i + 1] | tokens[..i]).
   */
  async scoreTokens(tokens: Token[], signal?: AbortSignal): Promise<{ adapter: string; logprobs: number[] }> {
    if (tokens.length < 2) return { adapter: this.gate.adapterVersion, logprobs: [] };
    const lease = await this.gate.acquire(tokens, signal);
    try {
      const seq = lease.sequence;
      if (tokens.length > seq.contextSize) throw new Error(`the text has ${tokens.length} tokens; the context holds ${seq.contextSize}`);
      // Every position's logits are needed, so nothing cached is reused.
      if (seq.nextTokenIndex > 0) await seq.eraseContextTokenRanges([{ start: 0, end: seq.nextTokenIndex }]);
      return { adapter: lease.adapterVersion, logprobs: await targetLogprobs(seq, tokens, tokens.slice(1)) };
    } finally {
      lease.release();
    }
  }

  private async run(
    seq: LlamaContextSequence,
    adapter: string,
    rendered: { tokens: Token[]; stopTriggers: string[] },
    req: GenerateRequest,
    hooks: GenerateHooks,
    /** when the request began waiting for its sequence (performance.now()) */
    queuedAt: number,
    toolGrammars: Map<string, { grammar: LlamaGrammar; reserve: number }> = new Map(),
  ): Promise<GenerateResult> {
    const started = performance.now();
    const prompt = rendered.tokens;
    const contextSize = seq.contextSize;
    const temperature = req.temperature ?? 1;
    const topP = req.topP ?? 1;
    const seed = req.seed ?? Math.floor(Math.random() * 2 ** 31);
    const rng = createRng(seed);
    const room = contextSize - prompt.length;
    const maxTokens = Math.max(1, Math.min(req.maxTokens ?? room, room));
    const stops = [...(req.stop ?? []), ...rendered.stopTriggers].filter((s) => s.length > 0);
    const toolMode = !!req.tools?.length && req.toolChoice !== "none";
    const forced = toolMode && (req.toolChoice === "required" || typeof req.toolChoice === "object");
    const topN = req.topLogprobs ?? 0;

    // Reuse the KV cache of the prefix this sequence already holds (the same conversation's last turn).
    const held = seq.contextTokens;
    let common = 0;
    while (common < held.length && common < prompt.length && held[common] === prompt[common]) common++;
    const start = Math.min(common, prompt.length - 1);
    if (seq.nextTokenIndex > start) await seq.eraseContextTokenRanges([{ start, end: seq.nextTokenIndex }]);
    let forcedCall = forced
      ? new ForcedToolCall(this, req.tools!, req.toolChoice as "required" | { name: string }, {
          grammars: toolGrammars,
          budget: maxTokens,
          parallel: req.parallelToolCalls !== false && req.toolChoice === "required",
        })
      : null;
    // An answer held to a grammar (response_format); not with a forced call, whose arguments have their own.
    const grammar = req.grammar && !forcedCall ? req.grammar : null;
    // A call the model opened itself (tool_choice auto): from its name on it is held as a forced one is; the content before it stays.
    let openedAfter: string | null = null;

    const responseTokens: number[] = [];
    const tokenLogprobs: number[] = [];
    const infos: TokenLogprob[] = [];
    // Tokens charged against max_tokens: all of them, except a forced call's syntax and name.
    let charged = 0;
    const closeFrom = grammar ? maxTokens - Math.min(req.grammarReserve ?? 16, Math.floor(maxTokens / 2)) : Infinity;
    const closing = () => (forcedCall ? forcedCall.closing : grammar !== null && charged >= closeFrom);
    // Whether the JSON so far is inside a string (which closing tokens close it), fed each token as it comes.
    const scan = new JsonStringScan();
    const inString = () => (forcedCall ? forcedCall.inString : scan.inString);
    const history = () => responseTokens.slice(-PENALTY_LAST_N);
    const bias = new Map<number, number>();
    for (const [k, v] of Object.entries(req.logitBias ?? {})) bias.set(Number(k), v <= BAN_AT ? -Infinity : v);
    // What is held to a grammar (the answer, or a call now or once the model opens one) also bans broken UTF-8, and near its budget favours closers.
    const holds = !!grammar || toolMode;
    const heldBias = new Map(bias);
    if (holds) for (const t of this.brokenUtf8Tokens()) heldBias.set(t, -Infinity);
    const closerBias = (tokens: number[]) => {
      const m = new Map(heldBias);
      for (const t of tokens) if ((m.get(t) ?? 0) > -Infinity) m.set(t, (m.get(t) ?? 0) + 30);
      return m;
    };
    const closers = holds ? this.closingTokens() : { quote: [], bracket: [] };
    const quoteBias = closerBias(closers.quote);
    const bracketBias = closerBias(closers.bracket);
    const biasNow = () => (!closing() ? (grammar || forcedCall ? heldBias : bias) : inString() ? quoteBias : bracketBias);
    const penalties =
      (req.repeatPenalty ?? 1) !== 1 || (req.frequencyPenalty ?? 0) !== 0 || (req.presencePenalty ?? 0) !== 0
        ? { repeat: req.repeatPenalty ?? 1, frequency: req.frequencyPenalty ?? 0, presence: req.presencePenalty ?? 0 }
        : null;
    const adjusted = !!grammar || bias.size > 0 || penalties !== null || (req.topK ?? 0) > 0 || (req.minP ?? 0) > 0;
    // llama.cpp's sampler serves every request without alternatives or forced tokens. Greedy:
    // the pick and its temperature-1 probability in one native call (GreedyStepper). Sampled:
    // the confidence is p(token) at temperature 1 from a second sort-free pass over the logits
    // (tokenProbability.ts), for any temperature and top-p (llama.cpp's order: the nucleus at
    // temperature 1, then the temperature, as the gate's fluency probe samples); where that is
    // not installed, node-llama-cpp's own confidence is p at temperature 1 only for temperature 1
    // without top-p. Everything else samples in JS from the raw logits: the whole vocabulary
    // crosses into JS each token, ~110 ms a token at 152k (Qwen3-0.6B shape, 2 threads), so only
    // top log-probs and forced tool calls take it.
    const exact = hasExactTokenProbability(seq.context);
    // A grammar, bias, penalty, top-k or min-p is llama.cpp's sampler's too (its confidence stays
    // p at temperature 1 where tokenProbability.ts is installed); where it is not, JS samples.
    const onLlamaSampler = !forcedCall && topN === 0;
    const input = prompt.slice(start);
    let stepper: Stepper;
    // The grammar followed from JS when JS samples (top log-probs).
    let matcher: GrammarMatcher | null = null;
    if (onLlamaSampler && temperature === 0 && !adjusted) stepper = new GreedyStepper(seq, input);
    else if (onLlamaSampler && (exact ? temperature > 0 || adjusted : temperature === 1 && topP >= 1 && !adjusted)) {
      const extra: NativeSamplerExtras = { topK: req.topK, minP: req.minP };
      if (grammar) extra.grammar = new LlamaGrammarEvaluationState({ model: this.model, grammar });
      if (penalties) extra.repeatPenalty = { punishTokens: () => history() as Token[], maxPunishTokens: PENALTY_LAST_N, penalty: penalties.repeat, frequencyPenalty: penalties.frequency, presencePenalty: penalties.presence };
      if (bias.size > 0 || grammar) {
        const plain = this.tokenBias(grammar ? heldBias : bias);
        const quote = grammar ? this.tokenBias(quoteBias) : plain;
        const bracket = grammar ? this.tokenBias(bracketBias) : plain;
        extra.tokenBias = () => (!closing() ? plain : inString() ? quote : bracket);
      }
      stepper = new NativeStepper(seq, input, temperature, topP, seed, extra);
    } else {
      if (grammar) matcher = new GrammarMatcher(this.model, grammar);
      const adjust: SamplingAdjustments = {
        topK: req.topK,
        minP: req.minP,
        bias: biasNow,
        penalties: penalties ? { ...penalties, history } : undefined,
      };
      const m = matcher;
      const fc = forcedCall;
      stepper = new LogitsStepper(seq, input, {
        temperature,
        topP,
        rng: createRng(seed),
        topLogprobs: topN,
        allowed: fc ? (t) => fc.allows(t) : m ? (t) => m.allows(t) : undefined,
        forced: fc ? () => fc.nextForced() : undefined,
        adjust,
      });
    }

    let finishReason: GenerateResult["finishReason"] = "length";
    // The response tokens that make up the text (no end-of-generation token), detokenized incrementally.
    const textOf = new IncrementalDetokenizer(this.model, req.continuesPrompt ? prompt : []);

    // Streaming state: what was already sent.
    let sentContent = "";
    let pendingInfos: TokenLogprob[] = [];
    const sentCalls: Array<{ id: string; name: string | null; args: string }> = [];

    /** `text`: what may be shown so far; `whole`: nothing after it is held back. */
    const emit = (text: string, final: boolean, whole = final) => {
      if (!hooks.onEvent) return;
      let content: string;
      let calls: Array<{ name: string | null; arguments: string }> = [];
      if (forcedCall) {
        content = openedAfter ?? "";
        calls = forcedCall.partialCalls();
      } else if (toolMode) {
        const parsed = parseAnswer(text, this.syntax, final);
        content = parsed.content;
        calls = parsed.calls;
      } else content = text;
      if (content.length > sentContent.length && content.startsWith(sentContent)) {
        hooks.onEvent({ type: "content", text: content.slice(sentContent.length), logprobs: pendingInfos });
        pendingInfos = [];
        sentContent = content;
      } else if (whole && !final && !toolMode && content === sentContent && pendingInfos.length > 0) {
        // Tokens that add no text (control or unused tokens) are streamed as they come, not with
        // the next visible text: else a run of them reaches the client only at the end.
        hooks.onEvent({ type: "content", text: "", logprobs: pendingInfos });
        pendingInfos = [];
      }
      calls.forEach((c, i) => {
        if (c.name === null) return;
        if (!sentCalls[i]) {
          sentCalls[i] = { id: callId(), name: c.name, args: "" };
          hooks.onEvent!({ type: "toolCall", index: i, id: sentCalls[i].id, name: c.name });
        }
        if (c.arguments.length > sentCalls[i].args.length && c.arguments.startsWith(sentCalls[i].args)) {
          hooks.onEvent!({ type: "toolArguments", index: i, text: c.arguments.slice(sentCalls[i].args.length) });
          sentCalls[i].args = c.arguments;
        }
      });
      if (final && pendingInfos.length > 0) {
        hooks.onEvent({ type: "content", text: "", logprobs: pendingInfos });
        pendingInfos = [];
      }
    };

    let text = "";
    // When its first token came, and its last.
    let firstAt = 0;
    let lastAt = 0;
    try {
    for (;;) {
      if (hooks.signal?.aborted) throw new AbortedError();
      const { token, logprob: lp, top, choices } = await stepper.next();
      lastAt = performance.now();
      if (firstAt === 0) firstAt = lastAt;
      if (forcedCall) forcedCall.accept(token, choices !== 1);
      else charged++;
      matcher?.accept(token);
      if (grammar && !this.model.isEogToken(token as Token)) scan.push(this.tokenText(token));
      responseTokens.push(token);
      tokenLogprobs.push(lp);
      const eog = this.model.isEogToken(token as Token);
      const info: TokenLogprob = {
        token,
        text: eog ? "" : this.tokenText(token),
        logprob: lp,
        top: top.map((t) => ({ token: t.token, text: this.tokenText(t.token), logprob: t.logprob })),
      };
      infos.push(info);
      pendingInfos.push(info);
      if (eog) {
        finishReason = "stop";
        break;
      }
      // The model computes the next token while this one is decoded and streamed. A stop
      // string found below then costs one wasted step, nothing else.
      if (!forcedCall?.finished && !forcedCall?.overBudget && (forcedCall || charged < maxTokens) && seq.nextTokenIndex + 2 < contextSize) stepper.prefetch();
      // Text before this mark cannot change, and was searched for stop strings already.
      const settled = textOf.settledLength;
      text = textOf.push(token);
      const stopAt = stops.reduce((best, s) => {
        const i = text.indexOf(s, Math.max(0, settled - s.length + 1));
        return i >= 0 && (best < 0 || i < best) ? i : best;
      }, -1);
      if (stopAt >= 0) {
        text = text.slice(0, stopAt);
        finishReason = "stop";
        break;
      }
      if (forcedCall?.finished) {
        finishReason = "tool_calls";
        break;
      }
      if (grammar && jsonComplete(text)) {
        finishReason = "stop";
        break;
      }
      if ((forcedCall ? forcedCall.overBudget : charged >= maxTokens) || seq.nextTokenIndex + 1 >= contextSize) break;
      if (toolMode && !forcedCall && !grammar) {
        const opened = this.openedCall(text, req.tools);
        if (opened) {
          // The call's name and arguments are sampled in JS under the call's constraints: the
          // last token is fed again (erased first when it was evaluated ahead) to get its logits.
          await stepper.close();
          const last = responseTokens[responseTokens.length - 1] as Token;
          const end = prompt.length + responseTokens.length;
          if (seq.nextTokenIndex >= end) await seq.eraseContextTokenRanges([{ start: end - 1, end: seq.nextTokenIndex }]);
          openedAfter = opened.content;
          const call = new ForcedToolCall(
            this,
            req.tools!,
            "required",
            { grammars: toolGrammars, budget: Math.max(1, maxTokens - charged), parallel: req.parallelToolCalls !== false },
            opened.nameText,
          );
          forcedCall = call;
          stepper = new LogitsStepper(seq, [last], {
            temperature,
            topP,
            rng: createRng(seed + responseTokens.length),
            topLogprobs: topN,
            allowed: (t) => call.allows(t),
            forced: () => call.nextForced(),
            adjust: { topK: req.topK, minP: req.minP, bias: biasNow, penalties: penalties ? { ...penalties, history } : undefined },
          });
        }
      }
      // Hold back an incomplete UTF-8 character and a possible start of a stop string.
      let hold = text.endsWith("\uFFFD") ? 1 : 0;
      for (const s of stops) hold = Math.max(hold, partialTail(text, s));
      emit(text.slice(0, text.length - hold), false, hold === 0);
    }
    } finally {
      await stepper.close();
    }
    if (textOf.length === 0) text = "";
    emit(text, true);

    let content = text;
    let toolCalls: GeneratedToolCall[] = [];
    if (forcedCall) {
      content = openedAfter ?? "";
      toolCalls = forcedCall.partialCalls().map((c, i) => ({ id: sentCalls[i]?.id ?? callId(), name: c.name ?? "", arguments: c.arguments }));
      if (forcedCall.complete) finishReason = "tool_calls";
    } else if (toolMode) {
      const parsed = parseAnswer(text, this.syntax, true);
      const complete = parsed.calls.filter((c) => c.complete && c.name);
      if (complete.length > 0) {
        content = parsed.content;
        toolCalls = complete.map((c, i) => ({ id: sentCalls[i]?.id ?? callId(), name: c.name!, arguments: c.arguments }));
        if (finishReason === "stop") finishReason = "tool_calls";
      }
    }
    return {
      model: this.modelId,
      adapter,
      promptTokens: [...prompt],
      cachedPromptTokens: start,
      responseTokens,
      tokenLogprobs,
      logprobs: infos,
      text: content,
      toolCalls,
      finishReason,
      sampling: {
        temperature,
        topP,
        seed,
        maxTokens: req.maxTokens,
        ...(req.frequencyPenalty ? { frequencyPenalty: req.frequencyPenalty } : {}),
        ...(req.presencePenalty ? { presencePenalty: req.presencePenalty } : {}),
        ...(req.repeatPenalty !== undefined && req.repeatPenalty !== 1 ? { repeatPenalty: req.repeatPenalty } : {}),
        ...(req.topK ? { topK: req.topK } : {}),
        ...(req.minP ? { minP: req.minP } : {}),
        ...(req.logitBias && Object.keys(req.logitBias).length > 0 ? { logitBias: { ...req.logitBias } } : {}),
        ...(grammar ? { grammar: true } : {}),
      },
      timings: {
        queueMs: started - queuedAt,
        promptTokens: prompt.length - start,
        firstTokenMs: firstAt - started,
        decodeTokens: Math.max(0, responseTokens.length - 1),
        decodeMs: lastAt - firstAt,
      },
    };
  }

  /**
   * Whether `text` (an answer with tools offered) has opened a call whose name so far fits a
   * tool's: the content before it and the name's start. Not when the name already went astray
   * (the answer is then parsed as it is, as before).
   */
  private openedCall(text: string, tools: FunctionTool[] | undefined): { content: string; nameText: string } | null {
    for (const p of this.syntax.prefixes) {
      const at = p ? text.indexOf(p) : -1;
      if (at < 0) continue;
      const nameText = text.slice(at + p.length);
      const pp = this.syntax.paramsPrefix.split("{{functionName}}")[0];
      const fits = (tools ?? []).some((t) => {
        const target = t.name + pp;
        return target.startsWith(nameText) || (nameText.startsWith(target) && ["", "{"].includes(nameText.slice(target.length)));
      });
      if (!fits) return null;
      const content = parseAnswer(text, this.syntax, true).content;
      return { content, nameText };
    }
    return null;
  }

  private tokenBias(map: ReadonlyMap<number, number>): TokenBias {
    const b = TokenBias.for(this.model);
    for (const [t, v] of map) b.set(t as Token, v === -Infinity ? "never" : { logit: v });
    return b;
  }

  async close(): Promise<void> {
    await this.gate.close();
    await this.model.dispose();
    await this.llama.dispose();
  }
}

/** GPT-2's byte → printable-character table (what a byte-level BPE vocabulary's pieces are written in), inverted. */
function gpt2UnicodeToByte(): Map<string, number> {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const out = new Map<string, number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) out.set(String.fromCodePoint(keep.includes(b) ? b : 256 + extra++), b);
  return out;
}

/** See Engine.brokenUtf8Tokens. */
function brokenUtf8(bytes: number[]): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0xc0 || b === 0xc1 || b >= 0xf5) return true;
    if (b === 0xe0 || b === 0xed || b === 0xf0 || b === 0xf4) {
      const n = bytes[i + 1];
      if (n === undefined) return true;
      if ((b === 0xe0 && n < 0xa0) || (b === 0xed && n > 0x9f) || (b === 0xf0 && n < 0x90) || (b === 0xf4 && n > 0x8f)) return true;
    }
  }
  return false;
}

/** Follows JSON text far enough to say whether its end is inside a string. */
class JsonStringScan {
  inString = false;
  private escaped = false;

  push(text: string): this {
    for (const ch of text) {
      if (this.escaped) this.escaped = false;
      else if (this.inString && ch === "\\") this.escaped = true;
      else if (ch === '"') this.inString = !this.inString;
    }
    return this;
  }
}

/** True once `text` holds one whole JSON value (an answer held to a JSON grammar ends there). */
function jsonComplete(text: string): boolean {
  const t = text.trimEnd();
  return t.length > 0 && jsonValueEnd(t, 0) === t.length;
}

/**
 * A tool call the request forces (tool_choice "required" or a named function): the call's
 * syntax is forced token by token, the function name is constrained to a declared one, and the
 * arguments are held to the tool's `parameters` schema (a grammar; without parameters, to a JSON
 * object closed after a token budget), so even a model that never learned the syntax produces a
 * well-formed call. Only the argument tokens the model chose among several count against
 * max_tokens (not the syntax, the name or what the schema fixes): a small budget
 * cuts the arguments (finish "length", the call so far), never the call itself. With
 * "required" and parallel calls allowed, the model may open another call after each one.
 */
class ForcedToolCall {
  private phase: "name" | "args" | "suffix" | "more" | "done" = "name";
  private forced: number[] = [];
  private nameText = "";
  private readonly calls: Array<{ name: string | null; args: string }> = [];
  /** The current call's sampled argument tokens, detokenized together (a character may span tokens). */
  private argIds: number[] = [];
  private json = JsonObjectPrefix.afterOpenBrace();
  private matcher: GrammarMatcher | null = null;
  private reserve = 16;
  /** Argument tokens the model chose, over all calls (max_tokens bounds them together). */
  private argTokens = 0;
  private readonly targets: string[];
  private readonly pp: string;
  /** After a call: the token sequences that open another one. */
  private readonly openers: number[][];
  private static readonly MAX_CALLS = 4;

  constructor(
    private readonly engine: Engine,
    private readonly tools: FunctionTool[],
    private readonly choice: "required" | { name: string },
    private readonly opts: { grammars: Map<string, { grammar: LlamaGrammar; reserve: number }>; budget: number; parallel: boolean },
    /** The model opened the call itself and wrote this much of the name. */
    openedName?: string,
  ) {
    const { prefixes, paramsPrefix } = engine.syntax;
    this.pp = paramsPrefix.split("{{functionName}}")[0];
    this.targets = tools.map((t) => t.name + this.pp);
    this.openers = opts.parallel ? [prefixes[0], "\n" + prefixes[0]].map((p) => this.tokenize(p)).filter((t) => t.length > 0) : [];
    if (openedName === undefined) this.startCall(false);
    else {
      this.startCall(true);
      this.nameText = openedName;
      this.takeName();
    }
  }

  /** A whole name written: on to its arguments. */
  private takeName(): void {
    const hit = this.targets.findIndex((target) => this.nameText.startsWith(target));
    if (hit < 0) return;
    this.current.name = this.tools[hit].name;
    const rest = this.nameText.slice(this.targets[hit].length);
    this.current.args = "{";
    if (rest !== "{") this.forced.push(...this.tokenize("{"));
    this.enterArgs(this.tools[hit].name);
  }

  private tokenize(s: string): number[] {
    return this.engine.model.tokenize(s, true);
  }

  /** `opened`: the call's prefix was already written (the model chose to open another call). */
  private startCall(opened: boolean): void {
    const prefix = opened ? "" : this.engine.syntax.prefixes[0];
    if (typeof this.choice === "object") {
      this.forced.push(...this.tokenize(prefix + this.choice.name + this.pp + "{"));
      this.nameText = this.choice.name + this.pp;
      this.calls.push({ name: this.choice.name, args: "{" });
      this.enterArgs(this.choice.name);
    } else {
      if (prefix) this.forced.push(...this.tokenize(prefix));
      this.nameText = "";
      this.calls.push({ name: null, args: "" });
      this.phase = "name";
    }
  }

  private enterArgs(name: string): void {
    this.phase = "args";
    this.argIds = [];
    const g = this.opts.grammars.get(name);
    this.matcher = g ? new GrammarMatcher(this.engine.model, g.grammar) : null;
    this.reserve = g?.reserve ?? 8;
    this.json = JsonObjectPrefix.afterOpenBrace();
    if (this.matcher) for (const t of this.tokenize("{")) this.matcher.accept(t);
  }

  /** Parallel calls allowed, fewer than the most, and half the budget left (another call must have room to close). */
  private mayOpenAnother(): boolean {
    return this.openers.length > 0 && this.calls.length < ForcedToolCall.MAX_CALLS && this.argTokens < this.opts.budget / 2;
  }

  private get current(): { name: string | null; args: string } {
    return this.calls[this.calls.length - 1];
  }

  get finished(): boolean {
    return this.phase === "done" && this.forced.length === 0;
  }

  /** Every call opened is whole (an end-of-generation token may come now). */
  get complete(): boolean {
    return (this.phase === "done" || this.phase === "more") && this.forced.length === 0;
  }

  /** The arguments used the whole budget without closing. */
  get overBudget(): boolean {
    return this.phase === "args" && this.argTokens >= this.opts.budget;
  }

  /** Near the budget: closing tokens are favoured (the grammar keeps them where they fit). */
  get closing(): boolean {
    return this.phase === "args" && this.argTokens >= this.opts.budget - Math.min(this.reserve, Math.floor(this.opts.budget / 2));
  }

  /** The arguments so far end inside a string. */
  get inString(): boolean {
    return this.phase === "args" && new JsonStringScan().push(this.current.args).inString;
  }

  /** The next token to force, or null to sample (constrained by `allows`). */
  nextForced(): number | null {
    return this.forced.length > 0 ? this.forced[0] : null;
  }

  allows(token: number): boolean {
    const eog = this.engine.model.isEogToken(token as Token);
    if (this.phase === "more") return eog || this.openers.some((o) => o[0] === token);
    if (eog || this.engine.isSpecialToken(token)) return false;
    const t = this.engine.tokenText(token);
    if (!t) return false;
    if (this.phase === "name") {
      const s = this.nameText + t;
      return this.targets.some((target) => target.startsWith(s) || (s.startsWith(target) && s.length - target.length <= 1 && s.endsWith("{")));
    }
    if (this.phase === "args") return this.matcher ? this.matcher.allows(token) : this.json.clone().pushText(t);
    return false;
  }

  /** `free`: the model chose the token among several (only those count against the budget). */
  accept(token: number, free = true): void {
    if (this.forced.length > 0) {
      this.forced.shift();
      if (this.forced.length === 0 && this.phase === "suffix") this.phase = this.mayOpenAnother() ? "more" : "done";
      return;
    }
    if (this.phase === "more") {
      if (this.engine.model.isEogToken(token as Token)) {
        this.phase = "done";
        return;
      }
      const opener = this.openers.find((o) => o[0] === token) ?? [token];
      this.forced.push(...opener.slice(1));
      this.startCall(true);
      return;
    }
    const t = this.engine.tokenText(token);
    if (this.phase === "name") {
      this.nameText += t;
      this.takeName();
      return;
    }
    if (this.phase === "args") {
      this.argIds.push(token);
      this.current.args = "{" + this.engine.model.detokenize(this.argIds as Token[]);
      // What the schema fixes (keys, punctuation) is syntax, like the call's: not charged.
      if (free) this.argTokens++;
      if (this.matcher) {
        this.matcher.accept(token);
        if (jsonComplete(this.current.args)) this.finishArgs("");
      } else {
        this.json.pushText(t);
        if (this.json.done) this.finishArgs("");
        else if (this.argTokens >= Math.min(48, this.opts.budget)) this.finishArgs(this.json.closer());
      }
    }
  }

  private finishArgs(closer: string): void {
    this.current.args += closer;
    const suffix = this.engine.syntax.suffix.replaceAll("{{functionName}}", this.current.name ?? "");
    this.forced.push(...this.tokenize(closer + suffix));
    this.phase = "suffix";
    if (this.forced.length === 0) this.phase = this.mayOpenAnother() ? "more" : "done";
  }

  partialCalls(): Array<{ name: string | null; arguments: string }> {
    // An incomplete character at the end (a byte token of several) is held back: what streams only grows.
    const open = this.phase === "args" ? this.current : null;
    return this.calls.filter((c) => c.name !== null).map((c) => ({ name: c.name, arguments: c === open ? c.args.replace(/\uFFFD+$/, "") : c.args }));
  }
}
