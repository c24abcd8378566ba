import path from "node:path";
import {
  resolveChatWrapper,
  type ChatWrapper,
  type Llama,
  type LlamaContextSequence,
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
import { createRng } from "./sampling.js";
import { GreedyStepper, LogitsStepper, NativeStepper, type Stepper } from "./steppers.js";
import { defaultThreads } from "./threads.js";
import { hasExactTokenProbability, installExactTokenProbability, targetLogprobs } from "./tokenProbability.js";
import { parseAnswer, toolCallSyntax, type ToolCallSyntax } from "./toolCalls.js";

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
  sampling: { temperature: number; topP: number; seed?: number; maxTokens?: number };
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
    const queued = performance.now();
    const lease = await this.gate.acquire(rendered.tokens, hooks.signal);
    try {
      hooks.onStart?.({ adapter: lease.adapterVersion, promptTokens: rendered.tokens.length });
      return await this.run(lease.sequence, lease.adapterVersion, rendered, req, hooks, queued);
    } finally {
      lease.release();
    }
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
    const forcedCall = forced ? new ForcedToolCall(this, req.tools!, req.toolChoice as "required" | { name: string }) : null;
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
    const onLlamaSampler = !forcedCall && topN === 0;
    const input = prompt.slice(start);
    let stepper: Stepper;
    if (onLlamaSampler && temperature === 0) stepper = new GreedyStepper(seq, input);
    else if (onLlamaSampler && (exact ? temperature > 0 : temperature === 1 && topP >= 1)) stepper = new NativeStepper(seq, input, temperature, topP, seed);
    else {
      stepper = new LogitsStepper(seq, input, {
        temperature,
        topP,
        rng: createRng(seed),
        topLogprobs: topN,
        allowed: forcedCall ? (t) => forcedCall.allows(t) : undefined,
        forced: forcedCall ? () => forcedCall.nextForced() : undefined,
      });
    }

    const responseTokens: number[] = [];
    const tokenLogprobs: number[] = [];
    const infos: TokenLogprob[] = [];
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
        content = "";
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
      const { token, logprob: lp, top } = await stepper.next();
      lastAt = performance.now();
      if (firstAt === 0) firstAt = lastAt;
      forcedCall?.accept(token);
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
      if (!forcedCall?.finished && responseTokens.length < maxTokens && seq.nextTokenIndex + 2 < contextSize) stepper.prefetch();
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
      if (responseTokens.length >= maxTokens || seq.nextTokenIndex + 1 >= contextSize) break;
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
      content = "";
      toolCalls = forcedCall.partialCalls().map((c, i) => ({ id: sentCalls[i]?.id ?? callId(), name: c.name ?? "", arguments: c.arguments }));
      if (forcedCall.finished) finishReason = "tool_calls";
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
      sampling: { temperature, topP, seed, maxTokens: req.maxTokens },
      timings: {
        queueMs: started - queuedAt,
        promptTokens: prompt.length - start,
        firstTokenMs: firstAt - started,
        decodeTokens: Math.max(0, responseTokens.length - 1),
        decodeMs: lastAt - firstAt,
      },
    };
  }

  async close(): Promise<void> {
    await this.gate.close();
    await this.model.dispose();
    await this.llama.dispose();
  }
}

/**
 * A tool call the request forces (tool_choice "required" or a named function): the call's
 * syntax is forced token by token, the function name is constrained to a declared one, and
 * the arguments are constrained to a JSON object (closed after a token budget), so even a
 * model that never learned the syntax produces a well-formed call.
 */
class ForcedToolCall {
  private phase: "prefix" | "name" | "args" | "suffix" | "done" = "prefix";
  private forced: number[] = [];
  private nameText = "";
  private name: string | null = null;
  private args = "";
  private json = JsonObjectPrefix.afterOpenBrace();
  private argTokens = 0;
  private readonly argBudget = 48;
  private readonly targets: string[];

  constructor(
    private readonly engine: Engine,
    private readonly tools: FunctionTool[],
    choice: "required" | { name: string },
  ) {
    const { prefixes, paramsPrefix } = engine.syntax;
    const pp = paramsPrefix.split("{{functionName}}")[0];
    this.targets = tools.map((t) => t.name + pp);
    if (typeof choice === "object") {
      this.name = choice.name;
      this.forced = this.tokenize(prefixes[0] + choice.name + pp + "{");
      this.nameText = choice.name + pp;
      this.args = "{";
      this.phase = "args";
    } else {
      this.forced = this.tokenize(prefixes[0]);
      this.phase = "name";
    }
  }

  private tokenize(s: string): number[] {
    return this.engine.model.tokenize(s, true);
  }

  get finished(): boolean {
    return this.phase === "done" && this.forced.length === 0;
  }

  /** The next token to force, or null to sample (constrained by `allows`). */
  nextForced(): number | null {
    return this.forced.length > 0 ? this.forced[0] : null;
  }

  allows(token: number): boolean {
    if (this.engine.model.isEogToken(token as Token) || this.engine.isSpecialToken(token)) return false;
    const t = this.engine.tokenText(token);
    if (!t) return false;
    if (this.phase === "name") {
      const s = this.nameText + t;
      return this.targets.some((target) => target.startsWith(s) || (s.startsWith(target) && s.length - target.length <= 1 && s.endsWith("{")));
    }
    if (this.phase === "args") return this.json.clone().pushText(t);
    return false;
  }

  accept(token: number): void {
    if (this.forced.length > 0) {
      this.forced.shift();
      if (this.phase === "args" && this.forced.length === 0 && this.args === "{") return;
      return;
    }
    const t = this.engine.tokenText(token);
    if (this.phase === "name") {
      this.nameText += t;
      const hit = this.targets.findIndex((target) => this.nameText.startsWith(target));
      if (hit >= 0) {
        this.name = this.tools[hit].name;
        const rest = this.nameText.slice(this.targets[hit].length);
        this.phase = "args";
        if (rest === "{") this.args = "{";
        else {
          this.args = "{";
          this.forced = this.tokenize("{");
        }
      }
      return;
    }
    if (this.phase === "args") {
      this.json.pushText(t);
      this.args += t;
      this.argTokens++;
      if (this.json.done) this.finishArgs("");
      else if (this.argTokens >= this.argBudget) this.finishArgs(this.json.closer());
    }
  }

  private finishArgs(closer: string): void {
    this.args += closer;
    const suffix = this.engine.syntax.suffix.replaceAll("{{functionName}}", this.name ?? "");
    this.forced = this.tokenize(closer + suffix);
    this.phase = "done";
  }

  partialCalls(): Array<{ name: string | null; arguments: string }> {
    if (this.name === null) return [];
    return [{ name: this.name, arguments: this.args }];
  }
}
