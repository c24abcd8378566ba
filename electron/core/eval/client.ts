/**
 * The eval's view of a running core, over its HTTP API only (the same whether the core runs
 * in this process or at --url): generation, feedback, settings, status, checkpoints. Replies are
 * the contract's types (electron/core/api/), through its Node client (api/apiClient.ts).
 */
import { ApiClient, errorOf } from "../api/apiClient.js";
import type { ChatCompletionReply, TextCompletionReply } from "../api/openai.js";
import type { StatusReply } from "../api/status.js";
import type { CheckpointView } from "../api/training.js";
import type { Settings } from "../api/settings.js";

export interface Answer {
  text: string;
  adapter: string;
  turnId: string;
  sessionId: string;
}

export interface GenerateOptions {
  seed: number;
  maxTokens: number;
  temperature: number;
  /** main turns train; held-out answers are side turns (never reacted to, never trained) */
  turnType: "main" | "side";
  sessionId: string;
  sessionDone?: boolean;
}

export class CoreClient {
  private readonly api: ApiClient;
  constructor(
    readonly url: string,
    token: string,
  ) {
    this.api = new ApiClient(url, token);
  }

  private turnHeaders(o: GenerateOptions): Record<string, string> {
    return { "x-session-id": o.sessionId, "x-turn-type": o.turnType, ...(o.sessionDone ? { "x-session-done": "1" } : {}) };
  }

  private answerOf(headers: Headers, text: string): Answer {
    return {
      text,
      adapter: headers.get("x-clawrl-adapter") ?? "unknown",
      turnId: headers.get("x-clawrl-turn-id") ?? "",
      sessionId: headers.get("x-clawrl-session-id") ?? "",
    };
  }

  /** A plain-text completion (no chat template): POST /v1/completions. */
  async complete(prompt: string, o: GenerateOptions): Promise<Answer> {
    const r = await this.api.call<TextCompletionReply>(
      "POST",
      "/v1/completions",
      { model: "eval", prompt, max_tokens: o.maxTokens, temperature: o.temperature, seed: o.seed },
      this.turnHeaders(o),
    );
    return this.answerOf(r.headers, r.body.choices[0].text);
  }

  /** Total log-prob of a text's tokens under the served adapter (echo + max_tokens 0) and how many were scored. */
  async scoreText(text: string): Promise<{ sum: number; tokens: number }> {
    const r = await this.api.call<TextCompletionReply>("POST", "/v1/completions", { model: "eval", prompt: text, max_tokens: 0, echo: true, logprobs: 0 });
    const lps = r.body.choices[0].logprobs!.token_logprobs.filter((x): x is number => x !== null);
    return { sum: lps.reduce((a, b) => a + b, 0), tokens: lps.length };
  }

  async chat(messages: Array<{ role: string; content: string }>, o: GenerateOptions): Promise<Answer> {
    const r = await this.api.call<ChatCompletionReply>(
      "POST",
      "/v1/chat/completions",
      { model: "eval", messages, max_tokens: o.maxTokens, temperature: o.temperature, seed: o.seed },
      this.turnHeaders(o),
    );
    return this.answerOf(r.headers, r.body.choices[0].message.content ?? "");
  }

  async feedback(turnId: string, thumbs: "up" | "down" | undefined, hint: string | undefined): Promise<void> {
    await this.api.call("POST", "/api/feedback", { turnId, ...(thumbs ? { thumbs } : {}), ...(hint ? { hint } : {}) });
  }

  async patchSettings(s: Partial<Settings>): Promise<void> {
    await this.api.call("PATCH", "/api/settings", s);
  }

  async status(): Promise<StatusReply> {
    return this.api.getJson("/api/status");
  }

  /** null when the core has no learning loop (no /api/checkpoints route). */
  async checkpoints(): Promise<CheckpointView[] | null> {
    const r = await this.api.request("GET", "/api/checkpoints");
    if (r.status === 404) return null;
    if (r.status !== 200) throw errorOf("GET", "/api/checkpoints", r);
    return (r.body as { checkpoints: CheckpointView[] }).checkpoints;
  }
}
