/**
 * One answer decoded on one sequence (Engine.generate's work once it holds a sequence), in its
 * phases: the prompt's cached prefix reused and the limits set (constructor, reusePrefix), the
 * sampler chosen (setupSampling), the decode loop (decode, one token per step), streamed as it
 * goes (emit), and the result recorded (finish).
 */
import { LlamaGrammarEvaluationState, type LlamaContextSequence, type LlamaGrammar, type Token } from "node-llama-cpp";
import { AbortedError } from "./adapterGate.js";
import { IncrementalDetokenizer } from "./detokenizer.js";
import type { Engine, GeneratedToolCall, GenerateHooks, GenerateRequest, GenerateResult, SamplingUsed, TokenLogprob } from "./engine.js";
import { ForcedToolCall, JsonStringScan, jsonComplete } from "./forcedToolCall.js";
import { GrammarMatcher } from "./grammarMatcher.js";
import { createRng, type SamplingAdjustments } from "./sampling.js";
import { GreedyStepper, LogitsStepper, NativeStepper, type NativeSamplerExtras, type Stepper } from "./steppers.js";
import { hasExactTokenProbability } from "./tokenProbability.js";
import { parseAnswer } from "./toolCalls.js";

/** The answer's tokens penalties look back over (llama.cpp's default penalty_last_n). */
const PENALTY_LAST_N = 64;
/** A logit bias at or below this bans the token (OpenAI: "-100 should result in a ban"). */
const BAN_AT = -100;

export type ToolGrammars = Map<string, { grammar: LlamaGrammar; reserve: number }>;

type Penalties = { repeat: number; frequency: number; presence: number };

export function callId(): string {
  return `call_${Math.random().toString(36).slice(2, 12)}${Math.random().toString(36).slice(2, 8)}`;
}

function partialTail(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) if (text.endsWith(marker.slice(0, n))) return n;
  return 0;
}

export class Generation {
  private readonly started = performance.now();
  private readonly prompt: Token[];
  private readonly contextSize: number;
  private readonly temperature: number;
  private readonly topP: number;
  private readonly seed: number;
  private readonly maxTokens: number;
  private readonly stops: string[];
  private readonly toolMode: boolean;
  private readonly topN: number;
  /** Prompt tokens whose KV cache is reused (set by reusePrefix). */
  private start = 0;
  private forcedCall: ForcedToolCall | null;
  /** An answer held to a grammar (response_format); not with a forced call, whose arguments have their own. */
  private readonly grammar: LlamaGrammar | null;
  /** A call the model opened itself (tool_choice auto): from its name on it is held as a forced one is; the content before it stays. */
  private openedAfter: string | null = null;

  private readonly responseTokens: number[] = [];
  private readonly tokenLogprobs: number[] = [];
  private readonly infos: TokenLogprob[] = [];
  /** Tokens charged against max_tokens: all of them, except a forced call's syntax and name. */
  private charged = 0;
  private readonly closeFrom: number;
  /** Whether the JSON so far is inside a string (which closing tokens close it), fed each token as it comes. */
  private readonly scan = new JsonStringScan();

  // Sampling (setupSampling).
  private bias = new Map<number, number>();
  private heldBias = new Map<number, number>();
  private quoteBias = new Map<number, number>();
  private bracketBias = new Map<number, number>();
  private penalties: Penalties | null = null;
  private stepper!: Stepper;
  /** The grammar followed from JS when JS samples (top log-probs). */
  private matcher: GrammarMatcher | null = null;

  // Decoding and streaming state.
  private finishReason: GenerateResult["finishReason"] = "length";
  /** The response tokens that make up the text (no end-of-generation token), detokenized incrementally. */
  private readonly textOf: IncrementalDetokenizer;
  private text = "";
  private sentContent = "";
  private pendingInfos: TokenLogprob[] = [];
  private readonly sentCalls: Array<{ id: string; name: string | null; args: string }> = [];
  /** When the first token came, and the last. */
  private firstAt = 0;
  private lastAt = 0;

  constructor(
    private readonly engine: Engine,
    private readonly seq: LlamaContextSequence,
    private readonly adapter: string,
    private readonly rendered: { tokens: Token[]; stopTriggers: string[] },
    private readonly req: GenerateRequest,
    private readonly hooks: GenerateHooks,
    /** when the request began waiting for its sequence (performance.now()) */
    private readonly queuedAt: number,
    private readonly toolGrammars: ToolGrammars = new Map(),
  ) {
    this.prompt = rendered.tokens;
    this.contextSize = seq.contextSize;
    this.temperature = req.temperature ?? 1;
    this.topP = req.topP ?? 1;
    this.seed = req.seed ?? Math.floor(Math.random() * 2 ** 31);
    const room = this.contextSize - this.prompt.length;
    this.maxTokens = Math.max(1, Math.min(req.maxTokens ?? room, room));
    this.stops = [...(req.stop ?? []), ...rendered.stopTriggers].filter((s) => s.length > 0);
    this.toolMode = !!req.tools?.length && req.toolChoice !== "none";
    const forced = this.toolMode && (req.toolChoice === "required" || typeof req.toolChoice === "object");
    this.topN = req.topLogprobs ?? 0;
    this.forcedCall = forced
      ? new ForcedToolCall(engine, req.tools!, req.toolChoice as "required" | { name: string }, {
          grammars: toolGrammars,
          budget: this.maxTokens,
          parallel: req.parallelToolCalls !== false && req.toolChoice === "required",
        })
      : null;
    this.grammar = req.grammar && !this.forcedCall ? req.grammar : null;
    this.closeFrom = this.grammar ? this.maxTokens - Math.min(req.grammarReserve ?? 16, Math.floor(this.maxTokens / 2)) : Infinity;
    this.textOf = new IncrementalDetokenizer(engine.model, req.continuesPrompt ? this.prompt : []);
  }

  async run(): Promise<GenerateResult> {
    await this.reusePrefix();
    this.setupSampling();
    try {
      await this.decode();
    } finally {
      await this.stepper.close();
    }
    if (this.textOf.length === 0) this.text = "";
    this.emit(this.text, true);
    return this.finish();
  }

  /** Reuse the KV cache of the prefix this sequence already holds (the same conversation's last turn). */
  private async reusePrefix(): Promise<void> {
    const { seq, prompt } = this;
    const held = seq.contextTokens;
    let common = 0;
    while (common < held.length && common < prompt.length && held[common] === prompt[common]) common++;
    this.start = Math.min(common, prompt.length - 1);
    if (seq.nextTokenIndex > this.start) await seq.eraseContextTokenRanges([{ start: this.start, end: seq.nextTokenIndex }]);
  }

  private readonly closing = (): boolean => (this.forcedCall ? this.forcedCall.closing : this.grammar !== null && this.charged >= this.closeFrom);
  private readonly inString = (): boolean => (this.forcedCall ? this.forcedCall.inString : this.scan.inString);
  private readonly history = (): number[] => this.responseTokens.slice(-PENALTY_LAST_N);
  private readonly biasNow = (): ReadonlyMap<number, number> =>
    !this.closing() ? (this.grammar || this.forcedCall ? this.heldBias : this.bias) : this.inString() ? this.quoteBias : this.bracketBias;

  /** The logit biases: the request's, and what a grammar or a call adds (broken UTF-8 banned, closers favoured near the budget). */
  private setupBiases(): void {
    const { req } = this;
    for (const [k, v] of Object.entries(req.logitBias ?? {})) this.bias.set(Number(k), v <= BAN_AT ? -Infinity : v);
    // What is held to a grammar (the answer, or a call now or once the model opens one) also bans broken UTF-8, and near its budget favours closers.
    const holds = !!this.grammar || this.toolMode;
    this.heldBias = new Map(this.bias);
    if (holds) for (const t of this.engine.brokenUtf8Tokens()) this.heldBias.set(t, -Infinity);
    const closerBias = (tokens: number[]) => {
      const m = new Map(this.heldBias);
      for (const t of tokens) if ((m.get(t) ?? 0) > -Infinity) m.set(t, (m.get(t) ?? 0) + 30);
      return m;
    };
    const closers = holds ? this.engine.closingTokens() : { quote: [], bracket: [] };
    this.quoteBias = closerBias(closers.quote);
    this.bracketBias = closerBias(closers.bracket);
    this.penalties =
      (req.repeatPenalty ?? 1) !== 1 || (req.frequencyPenalty ?? 0) !== 0 || (req.presencePenalty ?? 0) !== 0
        ? { repeat: req.repeatPenalty ?? 1, frequency: req.frequencyPenalty ?? 0, presence: req.presencePenalty ?? 0 }
        : null;
  }

  /**
   * llama.cpp's sampler serves every request without alternatives or forced tokens. Greedy:
   * the pick and its temperature-1 probability in one native call (GreedyStepper). Sampled:
   * the confidence is p(token) at temperature 1 from a second sort-free pass over the logits
   * (tokenProbability.ts), for any temperature and top-p (llama.cpp's order: the nucleus at
   * temperature 1, then the temperature, as the gate's fluency probe samples); where that is
   * not installed, node-llama-cpp's own confidence is p at temperature 1 only for temperature 1
   * without top-p. Everything else samples in JS from the raw logits: the whole vocabulary
   * crosses into JS each token, ~110 ms a token at 152k (Qwen3-0.6B shape, 2 threads), so only
   * top log-probs and forced tool calls take it.
   */
  private setupSampling(): void {
    this.setupBiases();
    const { req, seq, grammar, temperature, topP, seed, penalties, bias } = this;
    const adjusted = !!grammar || bias.size > 0 || penalties !== null || (req.topK ?? 0) > 0 || (req.minP ?? 0) > 0;
    const exact = hasExactTokenProbability(seq.context);
    // A grammar, bias, penalty, top-k or min-p is llama.cpp's sampler's too (its confidence stays
    // p at temperature 1 where tokenProbability.ts is installed); where it is not, JS samples.
    const onLlamaSampler = !this.forcedCall && this.topN === 0;
    const input = this.prompt.slice(this.start);
    if (onLlamaSampler && temperature === 0 && !adjusted) this.stepper = new GreedyStepper(seq, input);
    else if (onLlamaSampler && (exact ? temperature > 0 || adjusted : temperature === 1 && topP >= 1 && !adjusted)) {
      this.stepper = new NativeStepper(seq, input, temperature, topP, seed, this.nativeExtras());
    } else {
      if (grammar) this.matcher = new GrammarMatcher(this.engine.model, grammar);
      const m = this.matcher;
      const fc = this.forcedCall;
      this.stepper = new LogitsStepper(seq, input, {
        temperature,
        topP,
        rng: createRng(seed),
        topLogprobs: this.topN,
        allowed: fc ? (t) => fc.allows(t) : m ? (t) => m.allows(t) : undefined,
        forced: fc ? () => fc.nextForced() : undefined,
        adjust: this.adjustments(),
      });
    }
  }

  /** What llama.cpp's sampler applies beyond temperature and top-p. */
  private nativeExtras(): NativeSamplerExtras {
    const { req, grammar, penalties, bias } = this;
    const extra: NativeSamplerExtras = { topK: req.topK, minP: req.minP };
    if (grammar) extra.grammar = new LlamaGrammarEvaluationState({ model: this.engine.model, grammar });
    if (penalties) {
      const history = this.history;
      extra.repeatPenalty = {
        punishTokens: () => history() as Token[],
        maxPunishTokens: PENALTY_LAST_N,
        penalty: penalties.repeat,
        frequencyPenalty: penalties.frequency,
        presencePenalty: penalties.presence,
      };
    }
    if (bias.size > 0 || grammar) {
      const plain = this.engine.tokenBias(grammar ? this.heldBias : bias);
      const quote = grammar ? this.engine.tokenBias(this.quoteBias) : plain;
      const bracket = grammar ? this.engine.tokenBias(this.bracketBias) : plain;
      const { closing, inString } = this;
      extra.tokenBias = () => (!closing() ? plain : inString() ? quote : bracket);
    }
    return extra;
  }

  /** What JS sampling applies beyond temperature and top-p. */
  private adjustments(): SamplingAdjustments {
    const { req, penalties } = this;
    return { topK: req.topK, minP: req.minP, bias: this.biasNow, penalties: penalties ? { ...penalties, history: this.history } : undefined };
  }

  /** The decode loop: one token a step, until an end, a stop string, a finished call, a whole JSON value or the budget. */
  private async decode(): Promise<void> {
    const { hooks, seq, stops } = this;
    for (;;) {
      if (hooks.signal?.aborted) throw new AbortedError();
      const { token, logprob, top, choices } = await this.stepper.next();
      if (this.accept(token, logprob, top, choices)) {
        this.finishReason = "stop";
        break;
      }
      // The model computes the next token while this one is decoded and streamed. A stop
      // string found below then costs one wasted step, nothing else.
      const fc = this.forcedCall;
      if (!fc?.finished && !fc?.overBudget && (fc || this.charged < this.maxTokens) && seq.nextTokenIndex + 2 < this.contextSize) this.stepper.prefetch();
      // Text before this mark cannot change, and was searched for stop strings already.
      const settled = this.textOf.settledLength;
      this.text = this.textOf.push(token);
      if (this.ended(settled)) break;
      if (this.toolMode && !this.forcedCall && !this.grammar) await this.followOpenedCall();
      // Hold back an incomplete UTF-8 character and a possible start of a stop string.
      const text = this.text;
      let hold = text.endsWith("\uFFFD") ? 1 : 0;
      for (const s of stops) hold = Math.max(hold, partialTail(text, s));
      this.emit(text.slice(0, text.length - hold), false, hold === 0);
    }
  }

  /** Records a sampled token; true when it ends the generation. */
  private accept(token: number, logprob: number, top: Array<{ token: number; logprob: number }>, choices: number | undefined): boolean {
    const { engine } = this;
    this.lastAt = performance.now();
    if (this.firstAt === 0) {
      this.firstAt = this.lastAt;
      this.hooks.onFirstToken?.();
    }
    if (this.forcedCall) this.forcedCall.accept(token, choices !== 1);
    else this.charged++;
    this.matcher?.accept(token);
    if (this.grammar && !engine.model.isEogToken(token as Token)) this.scan.push(engine.tokenText(token));
    this.responseTokens.push(token);
    this.tokenLogprobs.push(logprob);
    const eog = engine.model.isEogToken(token as Token);
    const info: TokenLogprob = {
      token,
      text: eog ? "" : engine.tokenText(token),
      logprob,
      top: top.map((t) => ({ token: t.token, text: engine.tokenText(t.token), logprob: t.logprob })),
    };
    this.infos.push(info);
    this.pendingInfos.push(info);
    return eog;
  }

  /** Whether the text so far ends the answer (a stop string cuts it there). */
  private ended(settled: number): boolean {
    const text = this.text;
    const stopAt = this.stops.reduce((best, s) => {
      const i = text.indexOf(s, Math.max(0, settled - s.length + 1));
      return i >= 0 && (best < 0 || i < best) ? i : best;
    }, -1);
    if (stopAt >= 0) {
      this.text = text.slice(0, stopAt);
      this.finishReason = "stop";
      return true;
    }
    if (this.forcedCall?.finished) {
      this.finishReason = "tool_calls";
      return true;
    }
    if (this.grammar && jsonComplete(text)) {
      this.finishReason = "stop";
      return true;
    }
    return (this.forcedCall ? this.forcedCall.overBudget : this.charged >= this.maxTokens) || this.seq.nextTokenIndex + 1 >= this.contextSize;
  }

  /**
   * Once the model opened a call itself, its name and arguments are sampled in JS under the
   * call's constraints: the last token is fed again (erased first when it was evaluated ahead) to get its logits.
   */
  private async followOpenedCall(): Promise<void> {
    const { req, seq, responseTokens } = this;
    const opened = this.engine.openedCall(this.text, req.tools);
    if (!opened) return;
    await this.stepper.close();
    const last = responseTokens[responseTokens.length - 1] as Token;
    const end = this.prompt.length + responseTokens.length;
    if (seq.nextTokenIndex >= end) await seq.eraseContextTokenRanges([{ start: end - 1, end: seq.nextTokenIndex }]);
    this.openedAfter = opened.content;
    const call = new ForcedToolCall(
      this.engine,
      req.tools!,
      "required",
      { grammars: this.toolGrammars, budget: Math.max(1, this.maxTokens - this.charged), parallel: req.parallelToolCalls !== false },
      opened.nameText,
    );
    this.forcedCall = call;
    this.stepper = new LogitsStepper(seq, [last], {
      temperature: this.temperature,
      topP: this.topP,
      rng: createRng(this.seed + responseTokens.length),
      topLogprobs: this.topN,
      allowed: (t) => call.allows(t),
      forced: () => call.nextForced(),
      adjust: this.adjustments(),
    });
  }

  /** Streams what is new. `text`: what may be shown so far; `whole`: nothing after it is held back. */
  private emit(text: string, final: boolean, whole = final): void {
    const { hooks, forcedCall, sentCalls } = this;
    if (!hooks.onEvent) return;
    let content: string;
    let calls: Array<{ name: string | null; arguments: string }> = [];
    if (forcedCall) {
      content = this.openedAfter ?? "";
      calls = forcedCall.partialCalls();
    } else if (this.toolMode) {
      const parsed = parseAnswer(text, this.engine.syntax, final);
      content = parsed.content;
      calls = parsed.calls;
    } else content = text;
    if (content.length > this.sentContent.length && content.startsWith(this.sentContent)) {
      hooks.onEvent({ type: "content", text: content.slice(this.sentContent.length), logprobs: this.pendingInfos });
      this.pendingInfos = [];
      this.sentContent = content;
    } else if (whole && !final && !this.toolMode && content === this.sentContent && this.pendingInfos.length > 0) {
      // Tokens that add no text (control or unused tokens) are streamed as they come, not with
      // the next visible text: else a run of them reaches the client only at the end.
      hooks.onEvent({ type: "content", text: "", logprobs: this.pendingInfos });
      this.pendingInfos = [];
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
    if (final && this.pendingInfos.length > 0) {
      hooks.onEvent({ type: "content", text: "", logprobs: this.pendingInfos });
      this.pendingInfos = [];
    }
  }

  /** The result: content and calls parsed, the sampling used and the timings recorded. */
  private finish(): GenerateResult {
    const { forcedCall, sentCalls, text, prompt, start, responseTokens } = this;
    let content = text;
    let toolCalls: GeneratedToolCall[] = [];
    if (forcedCall) {
      content = this.openedAfter ?? "";
      toolCalls = forcedCall.partialCalls().map((c, i) => ({ id: sentCalls[i]?.id ?? callId(), name: c.name ?? "", arguments: c.arguments }));
      if (forcedCall.complete) this.finishReason = "tool_calls";
    } else if (this.toolMode) {
      const parsed = parseAnswer(text, this.engine.syntax, true);
      const complete = parsed.calls.filter((c) => c.complete && c.name);
      if (complete.length > 0) {
        content = parsed.content;
        toolCalls = complete.map((c, i) => ({ id: sentCalls[i]?.id ?? callId(), name: c.name!, arguments: c.arguments }));
        if (this.finishReason === "stop") this.finishReason = "tool_calls";
      }
    }
    return {
      model: this.engine.modelId,
      adapter: this.adapter,
      promptTokens: [...prompt],
      cachedPromptTokens: start,
      responseTokens,
      tokenLogprobs: this.tokenLogprobs,
      logprobs: this.infos,
      text: content,
      toolCalls,
      finishReason: this.finishReason,
      sampling: this.samplingUsed(),
      timings: {
        queueMs: this.started - this.queuedAt,
        promptTokens: prompt.length - start,
        firstTokenMs: this.firstAt - this.started,
        decodeTokens: Math.max(0, responseTokens.length - 1),
        decodeMs: this.lastAt - this.firstAt,
      },
    };
  }

  private samplingUsed(): SamplingUsed {
    const { req } = this;
    return {
      temperature: this.temperature,
      topP: this.topP,
      seed: this.seed,
      maxTokens: req.maxTokens,
      ...(req.frequencyPenalty ? { frequencyPenalty: req.frequencyPenalty } : {}),
      ...(req.presencePenalty ? { presencePenalty: req.presencePenalty } : {}),
      ...(req.repeatPenalty !== undefined && req.repeatPenalty !== 1 ? { repeatPenalty: req.repeatPenalty } : {}),
      ...(req.topK ? { topK: req.topK } : {}),
      ...(req.minP ? { minP: req.minP } : {}),
      ...(req.logitBias && Object.keys(req.logitBias).length > 0 ? { logitBias: { ...req.logitBias } } : {}),
      ...(this.grammar ? { grammar: true } : {}),
    };
  }
}
