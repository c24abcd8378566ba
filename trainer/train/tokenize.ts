import { getLlama, resolveChatWrapper, type ChatHistoryItem, type ChatWrapper, type Llama, type LlamaModel } from "node-llama-cpp";
import { completionHintPrefix, hintSuffix } from "../loss/advantages.js";
import { sampleHints, type ChatMessage, type Sample } from "../../models/samples/sample.js";

/** The label of the context-distillation teacher among a sample's teachers (it has no hint text). */
export const PREFERENCE_TEACHER = "[preferences in the system prompt]";

/** A sample as token ids, ready for the trainer. */
export interface PreparedSample {
  /** Line in the data file (for messages), when it came from one. */
  line?: number;
  /** Prompt followed by response. */
  tokens: number[];
  /** Index of the first response token (the trainer's targetStart). */
  promptLength: number;
  reward?: number;
  /** lp_old of each response token as served (live-loop samples); absent: computed on-policy. */
  servedLogprobs?: number[];
  /**
   * One teacher sequence per hint (hint-augmented prompt + the same response tokens), then the
   * context-distillation teacher (the served prompt with the preference block) when there is one.
   * Combined and OPD use the first: a turn's own hint goes before the standing preferences.
   */
  teachers: Array<{ hint: string; tokens: number[]; promptLength: number }>;
  /** The prompt (or, when the response alone is too long, the response) was cut to fit. */
  truncated: boolean;
}

/**
 * Fits prompt + response into `maxContext` tokens: keeps the END of the prompt (the most
 * recent turns matter most); a response longer than the context keeps its start, leaving one
 * prompt token so the first response token still has a context.
 */
export function fitContext(
  prompt: readonly number[],
  response: readonly number[],
  maxContext: number,
): { prompt: number[]; response: number[]; truncated: boolean } {
  if (!Number.isInteger(maxContext) || maxContext < 2) throw new Error(`maximum training context must be at least 2 tokens, got ${maxContext}`);
  if (prompt.length + response.length <= maxContext) return { prompt: [...prompt], response: [...response], truncated: false };
  const resp = response.length > maxContext - 1 ? response.slice(0, maxContext - 1) : [...response];
  const keep = maxContext - resp.length;
  return { prompt: prompt.slice(prompt.length - keep), response: resp, truncated: true };
}

function contentText(m: ChatMessage): string {
  const c = m.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c))
    return c
      .filter((p) => p.type === "text" && typeof p.text === "string")
      .map((p) => p.text)
      .join("\n");
  return "";
}

/**
 * OpenAI-style messages → node-llama-cpp chat history, ending with an empty model turn so the
 * template renders the prompt up to where the assistant starts writing. Tool results have no
 * history item of their own in node-llama-cpp; they become user text marked as a tool result.
 */
export function toChatHistory(messages: readonly ChatMessage[], hint?: string): ChatHistoryItem[] {
  const lastUser = hint === undefined ? -1 : messages.map((m) => m.role).lastIndexOf("user");
  const items: ChatHistoryItem[] = messages.map((m, i): ChatHistoryItem => {
    let text = contentText(m);
    if (i === lastUser && hint !== undefined) text += hintSuffix(hint);
    switch (m.role) {
      case "system":
      case "developer":
        return { type: "system", text };
      case "user":
        return { type: "user", text };
      case "assistant":
        return { type: "model", response: [text] };
      case "tool":
        return { type: "user", text: `[tool result]\n${text}` };
    }
  });
  items.push({ type: "model", response: [] });
  return items;
}

export interface PrepareOptions {
  maxContext: number;
  /** Append the model's end-of-turn token (EOT, else EOS) to text responses, so the
   * trainer also learns where an answer stops. Default true. */
  appendEndToken?: boolean;
}

let sharedLlama: Promise<Llama> | null = null;

/**
 * Tokenizes samples with the model's own vocabulary and chat template (node-llama-cpp,
 * vocabulary only: no weights are loaded).
 */
export class SampleTokenizer {
  private wrapper: ChatWrapper | undefined;
  private constructor(
    private readonly llama: Llama,
    readonly model: LlamaModel,
  ) {}

  static async open(modelPath: string): Promise<SampleTokenizer> {
    // One CPU llama.cpp binding per process (starting it costs seconds); only the vocabulary
    // is loaded per model.
    sharedLlama ??= getLlama({ gpu: false, logLevel: "error" as never });
    const llama = await sharedLlama;
    try {
      const model = await llama.loadModel({ modelPath, vocabOnly: true });
      return new SampleTokenizer(llama, model);
    } catch (e) {
      throw new Error(`cannot load the tokenizer of ${modelPath}: ${(e as Error).message.split("\n")[0]}`, { cause: e });
    }
  }

  /** The prompt as the chat template renders it (special tokens included). */
  renderPrompt(messages: readonly ChatMessage[], hint?: string): number[] {
    // Resolving compares the model's Jinja template with every built-in wrapper: slow, so once.
    const wrapper = (this.wrapper ??= resolveChatWrapper(this.model));
    const { contextText } = wrapper.generateContextState({ chatHistory: toChatHistory(messages, hint) });
    return [...contextText.tokenize(this.model.tokenizer)];
  }

  /** A plain-text prompt (format "completion"): BOS when the model wants one, then the text. */
  renderPlain(messages: readonly ChatMessage[]): number[] {
    const user = messages.find((m) => m.role === "user");
    const bos = this.model.tokens.bos;
    const ids = [...this.model.tokenize(user ? contentText(user) : "", false)];
    return this.model.tokens.shouldPrependBosToken && bos !== null ? [bos, ...ids] : ids;
  }

  /** The teacher's plain-text prompt: the hint as a paragraph, then the student's prompt tokens unchanged. */
  plainTeacherPrompt(prompt: readonly number[], hint: string): number[] {
    const bos = this.model.tokens.bos;
    const lead = bos !== null && prompt[0] === bos ? [bos] : [];
    return [...lead, ...this.model.tokenize(completionHintPrefix(hint), false), ...prompt.slice(lead.length)];
  }

  tokenizeResponse(text: string, appendEndToken = true): number[] {
    const ids = [...this.model.tokenize(text, false)];
    const end = this.model.tokens.eot ?? this.model.tokens.eos;
    if (appendEndToken && end !== null) ids.push(end);
    return ids;
  }

  prepare(sample: Sample, opts: PrepareOptions, line?: number): PreparedSample {
    const where = line !== undefined ? `line ${line}: ` : "";
    const plain = sample.format === "completion";
    const prompt = sample.prompt_tokens ?? (plain ? this.renderPlain(sample.messages ?? []) : this.renderPrompt(sample.messages ?? []));
    const response = sample.response_tokens ?? this.tokenizeResponse(sample.response ?? "", opts.appendEndToken ?? true);
    if (response.length === 0) throw new Error(`${where}the response is empty after tokenization`);
    const fit = fitContext(prompt, response, opts.maxContext);
    let teacherCut = false;
    const teachers = sampleHints(sample).map((hint) => {
      // The response is cut the same way (it depends only on its length), so the teacher
      // scores exactly the student's response tokens.
      const teacherPrompt = plain ? this.plainTeacherPrompt(prompt, hint) : this.renderPrompt(sample.messages ?? [], hint);
      const t = fitContext(teacherPrompt, response, opts.maxContext);
      teacherCut ||= t.truncated;
      return { hint, tokens: [...t.prompt, ...t.response], promptLength: t.prompt.length };
    });
    if (sample.teacher_prompt_tokens) {
      const t = fitContext(sample.teacher_prompt_tokens, response, opts.maxContext);
      teacherCut ||= t.truncated;
      teachers.push({ hint: PREFERENCE_TEACHER, tokens: [...t.prompt, ...t.response], promptLength: t.prompt.length });
    }
    return {
      ...(line !== undefined ? { line } : {}),
      tokens: [...fit.prompt, ...fit.response],
      promptLength: fit.prompt.length,
      ...(sample.reward !== undefined ? { reward: sample.reward } : {}),
      ...(sample.logprobs !== undefined ? { servedLogprobs: sample.logprobs.slice(0, fit.response.length) } : {}),
      teachers,
      truncated: fit.truncated || teacherCut,
    };
  }

  /** Frees the vocabulary (the shared binding stays for the next tokenizer). */
  async dispose(): Promise<void> {
    await this.model.dispose();
  }
}
