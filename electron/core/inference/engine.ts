import path from "node:path";
import {
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
import { AdapterGate, type SwapResult } from "./adapterGate.js";
import type { BackendName, BackendPreference } from "./backend.js";
import { chooseBackend, type BackendSkip, type ProbeOptions } from "./backendProbe.js";
import { renderPrompt, type FunctionTool } from "./chatPrompt.js";
import { assertLoadableGguf } from "../../../models/gguf/loadable.js";
import { loadBoundMs, loadWithin } from "./loadBound.js";
import { closingReserve, jsonSchemaGrammar } from "./jsonSchemaGrammar.js";
import { defaultServingContext, defaultServingShape, kvBytesPerToken } from "./contextSize.js";
import { defaultThreads, servingThreads } from "./threads.js";
import { installExactTokenProbability, targetLogprobs } from "./tokenProbability.js";
import { parseAnswer, toolCallSyntax, type ToolCallSyntax } from "./toolCalls.js";
import { Generation, type ToolGrammars } from "./generation.js";
import { Foreground } from "./foreground.js";

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
  /** Upper bound on each sequence's context; default: the trained context, on the CPU as far as the KV caches of two contexts (a swap's) fit 30% of RAM (contextSize.ts), fitted to memory. */
  maxContextSize?: number;
  /** Conversations served at once (sequences in the context); more wait in a FIFO queue. Default 4 (on the CPU, fewer when memory is short: contextSize.ts). */
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

/** Conversations served at once when not set. */
export const DEFAULT_SEQUENCES = 4;

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
  /** CPU threads per evaluation (the one asked for, else the app's default) */
  threads: number;
  /** the backend asked for (auto, or one named in the load settings / --gpu) */
  requestedBackend: BackendPreference;
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
  /** Called when the first token is sampled (before any event it leads to). */
  onFirstToken?(): void;
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
  /** CPU threads per evaluation, as loaded */
  private threads = 0;
  /** Conversations served at once, as loaded (the CPU default may serve fewer than asked: contextSize.ts) */
  private sequences = DEFAULT_SEQUENCES;
  /** While a chat request waits for its first token (the trainer stands aside meanwhile). */
  readonly foreground = new Foreground();

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
    const sequences = opts.sequences ?? DEFAULT_SEQUENCES;
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
          throw new Error(`cannot load model ${opts.modelPath}: ${(err as Error).message}`, { cause: err });
        }
        const threads = opts.threads ?? defaultThreads(model.size);
        // On the CPU, left to the app: the KV caches keep to a share of RAM, agents' long
        // contexts first (contextSize.ts); an asked context or sequence count is taken as asked.
        const shape =
          llama.gpu === false && opts.maxContextSize === undefined
            ? opts.sequences === undefined
              ? defaultServingShape(model.trainContextSize, kvBytesPerToken(opts.modelPath), sequences)
              : { contextSize: defaultServingContext(model.trainContextSize, kvBytesPerToken(opts.modelPath), sequences), sequences }
            : { contextSize: opts.maxContextSize ?? model.trainContextSize, sequences };
        const maxCtx = Math.min(shape.contextSize, model.trainContextSize);
        const gate = new AdapterGate({
          createContext: async (adapterPath) => {
            const context = await model.createContext({
              sequences: shape.sequences,
              contextSize: { max: maxCtx },
              threads: servingThreads(threads, llama),
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
        return { model, gate, threads, sequences: shape.sequences };
      },
      opts.probe,
    );
    const { model, gate, threads, sequences: served } = chosen.loaded;
    const wrapper = resolveChatWrapper(model);
    const engine = new Engine(chosen.llama, model, chosen.backend, wrapper, gate, opts, chosen.skipped, chosen.probe?.devices ?? []);
    engine.threads = threads ?? chosen.llama.maxThreads;
    engine.sequences = served;
    return engine;
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
      threads: this.threads,
      requestedBackend: this.opts.backend ?? "auto",
      sequences: this.sequences,
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
    const toolGrammars: ToolGrammars = withTools ? await this.toolGrammars(req) : new Map<string, { grammar: LlamaGrammar; reserve: number }>();
    const queued = performance.now();
    const lease = await this.gate.acquire(rendered.tokens, hooks.signal);
    // From here to the first token someone waits on this CPU: background work stands aside (foreground.ts).
    const waited = this.foreground.begin();
    try {
      hooks.onStart?.({ adapter: lease.adapterVersion, promptTokens: rendered.tokens.length });
      const onFirstToken = () => {
        waited();
        hooks.onFirstToken?.();
      };
      return await this.run(lease.sequence, lease.adapterVersion, rendered, req, { ...hooks, onFirstToken }, queued, toolGrammars);
    } finally {
      waited();
      lease.release();
    }
  }

  /** Grammars for the tools' parameters (a keyword no grammar expresses is left unenforced: the tool worked before). */
  private async toolGrammars(req: GenerateRequest): Promise<ToolGrammars> {
    const out: ToolGrammars = new Map();
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

  /** Decodes the answer on the sequence it holds (generation.ts: its phases). */
  private run(
    seq: LlamaContextSequence,
    adapter: string,
    rendered: { tokens: Token[]; stopTriggers: string[] },
    req: GenerateRequest,
    hooks: GenerateHooks,
    /** when the request began waiting for its sequence (performance.now()) */
    queuedAt: number,
    toolGrammars: ToolGrammars = new Map(),
  ): Promise<GenerateResult> {
    return new Generation(this, seq, adapter, rendered, req, hooks, queuedAt, toolGrammars).run();
  }

  /**
   * Whether `text` (an answer with tools offered) has opened a call whose name so far fits a
   * tool's: the content before it and the name's start. Not when the name already went astray
   * (the answer is then parsed as it is, as before).
   */
  /** @internal (generation.ts) */
  openedCall(text: string, tools: FunctionTool[] | undefined): { content: string; nameText: string } | null {
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

  /** @internal (generation.ts) */
  tokenBias(map: ReadonlyMap<number, number>): TokenBias {
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
