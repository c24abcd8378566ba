import { resolveChatWrapper, type ChatWrapper, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import type { ChatMessage } from "../api/chatTypes.js";
import { renderPrompt } from "../inference/chatPrompt.js";
import { loadBoundMs, loadWithin } from "../inference/loadBound.js";
import { assertLoadableGguf } from "../../../models/gguf/loadable.js";

export interface CompleteOptions {
  temperature: number;
  /** one completion per seed, run in parallel where the backend can */
  seeds: readonly number[];
  maxTokens: number;
  signal?: AbortSignal;
}

/** One completion: its text, or why it failed (the vote then counts as invalid). */
export type Completion = { text: string; error?: undefined } | { text: ""; error: string };

/** Where judge completions come from: the served model without adapter, another GGUF, or an endpoint. */
export interface JudgeBackend {
  /** recorded in the judge line (e.g. "base:qwen2-tiny", a GGUF path, "endpoint:gpt-4o@https://…") */
  readonly name: string;
  /** false when the prompt plus `maxTokens` does not fit the judge's context */
  fits(messages: ChatMessage[], maxTokens: number): boolean;
  complete(messages: ChatMessage[], opts: CompleteOptions): Promise<Completion[]>;
  close(): Promise<void>;
}

export class JudgeUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JudgeUnavailableError";
  }
}

export interface LocalJudgeOptions {
  /** parallel votes = sequences in the judge's own context (default 3) */
  parallel?: number;
  /** the judge context's size cap in tokens (default 4096, never above the model's trained context) */
  maxContextSize?: number;
  threads?: number;
  /**
   * True while chat is generating: the judge waits (up to `maxYieldMs` each time) before a
   * batch of votes and between tokens, so serving goes first.
   */
  busy?: () => boolean;
  maxYieldMs?: number;
}

/** Prompt tokens evaluated at a time by a local judge (it yields to chat between chunks). */
const PROMPT_CHUNK = 64;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A judge on a local model in its OWN context (never the serving context, so no adapter and
 * no competition for chat sequences). For the default "base" source the model is the one the
 * engine serves (weights shared, no second copy); for a GGUF source it is loaded here and
 * owned. The context is created on first use.
 */
export class LocalJudgeBackend implements JudgeBackend {
  private context: LlamaContext | null = null;
  private sequences: LlamaContextSequence[] = [];
  private opening: Promise<void> | null = null;
  private readonly wrapper: ChatWrapper;
  private closed = false;

  private constructor(
    readonly name: string,
    private readonly model: LlamaModel,
    private readonly ownsModel: boolean,
    private readonly opts: LocalJudgeOptions,
    wrapper?: ChatWrapper,
  ) {
    this.wrapper = wrapper ?? resolveChatWrapper(model);
  }

  /** The served model, without its adapter, in a separate context. */
  static onModel(name: string, model: LlamaModel, wrapper: ChatWrapper | undefined, opts: LocalJudgeOptions = {}): LocalJudgeBackend {
    return new LocalJudgeBackend(name, model, false, opts, wrapper);
  }

  /** Another GGUF, loaded now (fails with a clear message). */
  static async load(llama: Llama, modelPath: string, opts: LocalJudgeOptions = {}): Promise<LocalJudgeBackend> {
    let model: LlamaModel;
    try {
      // The app's own GGUF reader first: node-llama-cpp's loops on a hostile header (issue 26 F3).
      assertLoadableGguf(modelPath);
      model = await loadWithin(
        `the judge model ${modelPath}`,
        loadBoundMs(modelPath),
        (loadSignal) => llama.loadModel({ modelPath, loadSignal }),
        (late) => late.dispose(),
      );
    } catch (err) {
      throw new JudgeUnavailableError(`cannot load the judge model ${modelPath}: ${(err as Error).message}`);
    }
    return new LocalJudgeBackend(`gguf:${modelPath}`, model, true, opts);
  }

  private get contextCap(): number {
    return Math.min(this.opts.maxContextSize ?? 4096, this.model.trainContextSize);
  }

  fits(messages: ChatMessage[], maxTokens: number): boolean {
    const n = renderPrompt(this.model, this.wrapper, messages).tokens.length;
    // Leave room for at least a short verdict when maxTokens is larger than the space left.
    return n + Math.min(maxTokens, 32) < (this.context?.contextSize ?? this.contextCap);
  }

  private async open(): Promise<void> {
    if (this.context) return;
    this.opening ??= (async () => {
      const parallel = Math.max(1, this.opts.parallel ?? 3);
      const ctx = await this.model.createContext({ sequences: parallel, contextSize: { max: this.contextCap }, threads: this.opts.threads });
      this.context = ctx;
      this.sequences = Array.from({ length: parallel }, () => ctx.getSequence());
    })();
    try {
      await this.opening;
    } finally {
      this.opening = null;
    }
  }

  async complete(messages: ChatMessage[], opts: CompleteOptions): Promise<Completion[]> {
    if (this.closed) throw new JudgeUnavailableError("judge closed");
    await this.open();
    const rendered = renderPrompt(this.model, this.wrapper, messages);
    const out: Completion[] = [];
    for (let i = 0; i < opts.seeds.length; i += this.sequences.length) {
      await this.yieldToChat(opts.signal);
      const batch = opts.seeds.slice(i, i + this.sequences.length);
      out.push(
        ...(await Promise.all(
          batch.map((seed, j) =>
            this.one(this.sequences[j], rendered.tokens, rendered.stopTriggers, opts, seed).then(
              (text): Completion => ({ text }),
              (err: Error): Completion => ({ text: "", error: err.message }),
            ),
          ),
        )),
      );
    }
    return out;
  }

  private async yieldToChat(signal?: AbortSignal): Promise<void> {
    const busy = this.opts.busy;
    if (!busy) return;
    const until = Date.now() + (this.opts.maxYieldMs ?? 5_000);
    while (busy() && Date.now() < until && !signal?.aborted) await sleep(25);
  }

  private async one(seq: LlamaContextSequence, prompt: Token[], stops: string[], opts: CompleteOptions, seed: number): Promise<string> {
    await seq.clearHistory();
    const room = seq.contextSize - prompt.length - 1;
    if (room < 1) throw new Error(`judge prompt has ${prompt.length} tokens; the judge context holds ${seq.contextSize}`);
    const max = Math.min(opts.maxTokens, room);
    const tokens: Token[] = [];
    let text = "";
    // The prompt goes in in chunks, with chat going first between them: a judge prompt is long,
    // and one evaluation of it all would hold the CPU while a chat request waits.
    let at = 0;
    for (; prompt.length - at > PROMPT_CHUNK; at += PROMPT_CHUNK) {
      await this.yieldToChat(opts.signal);
      if (opts.signal?.aborted) throw new Error("judge aborted");
      await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(at, at + PROMPT_CHUNK));
    }
    await this.yieldToChat(opts.signal);
    for await (const t of seq.evaluate(prompt.slice(at), { temperature: opts.temperature, seed })) {
      if (opts.signal?.aborted) throw new Error("judge aborted");
      if (this.model.isEogToken(t)) break;
      tokens.push(t);
      text = this.model.detokenize(tokens, false);
      const cut = stops.map((s) => text.indexOf(s)).filter((i) => i >= 0);
      if (cut.length) {
        text = text.slice(0, Math.min(...cut));
        break;
      }
      if (tokens.length >= max) break;
      // Chat goes first: between tokens the judge's context sits still while chat generates.
      if (this.opts.busy?.()) await this.yieldToChat(opts.signal);
    }
    return text;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.opening?.catch(() => undefined);
    const ctx = this.context;
    this.context = null;
    this.sequences = [];
    await ctx?.dispose();
    if (this.ownsModel) await this.model.dispose();
  }
}

export interface EndpointJudgeOptions {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** per request (default 120 s) */
  timeoutMs?: number;
}

/** An OpenAI-compatible chat completions endpoint; votes are parallel requests with distinct seeds. */
export class EndpointJudgeBackend implements JudgeBackend {
  readonly name: string;

  constructor(private readonly opts: EndpointJudgeOptions) {
    this.name = `endpoint:${opts.model}@${opts.baseUrl}`;
  }

  fits(): boolean {
    return true;
  }

  async complete(messages: ChatMessage[], opts: CompleteOptions): Promise<Completion[]> {
    const url = `${this.opts.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    return Promise.all(
      opts.seeds.map(async (seed): Promise<Completion> => {
        try {
          const signals = [AbortSignal.timeout(this.opts.timeoutMs ?? 120_000), ...(opts.signal ? [opts.signal] : [])];
          const r = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json", ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}) },
            body: JSON.stringify({ model: this.opts.model, messages, temperature: opts.temperature, seed, max_tokens: opts.maxTokens }),
            signal: AbortSignal.any(signals),
          });
          const body = (await r.json().catch(() => null)) as { choices?: Array<{ message?: { content?: unknown } }>; error?: { message?: unknown } } | null;
          if (!r.ok)
            return {
              text: "",
              error: `judge endpoint ${url} answered ${r.status}${typeof body?.error?.message === "string" ? `: ${body.error.message}` : ""}`,
            };
          const content = body?.choices?.[0]?.message?.content;
          if (typeof content !== "string") return { text: "", error: `judge endpoint ${url} sent no message content` };
          return { text: content };
        } catch (err) {
          return { text: "", error: `judge endpoint ${url}: ${(err as Error).message}` };
        }
      }),
    );
  }

  async close(): Promise<void> {}
}
