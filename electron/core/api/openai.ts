/** /v1 replies (OpenAI wire format): server/routes/openai.ts and completions.ts. */
import type { ChatToolCall } from "./chatTypes.js";

export type FinishReason = "stop" | "length" | "tool_calls";

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** how much of the prompt reused the KV cache (absent when scoring a prompt) */
  prompt_tokens_details?: { cached_tokens: number };
}

/** One token's log-prob with its alternatives (chat `logprobs: true`). */
export interface ChatLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

/**
 * How long the answer took, as llama-server reports it (an extension OpenAI SDKs ignore):
 * `prompt_*` the prompt tokens evaluated (cached ones excluded) up to the first answer token,
 * `predicted_*` the answer tokens after the first.
 */
export interface LlamaTimings {
  prompt_n: number;
  prompt_ms: number;
  prompt_per_second: number | null;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_second: number | null;
}

export interface ChatCompletionReply {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  /** "clawrl-<adapter version>" */
  system_fingerprint: string;
  choices: {
    index: number;
    message: { role: "assistant"; content: string | null; refusal: null; tool_calls?: ChatToolCall[] };
    logprobs: { content: ChatLogprob[]; refusal: null } | null;
    finish_reason: FinishReason;
  }[];
  usage: Usage;
  timings: LlamaTimings;
}

/** A streamed chat chunk (`data:` line); the last one before `[DONE]` has no choices and the usage, when asked for. */
export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: {
      role?: "assistant";
      content?: string;
      tool_calls?: { index: number; id?: string; type?: "function"; function: { name?: string; arguments: string } }[];
    };
    logprobs: { content: ChatLogprob[]; refusal: null } | null;
    finish_reason: FinishReason | null;
  }[];
  usage?: Usage;
  /** on the chunk that carries the finish reason */
  timings?: LlamaTimings;
}

/** An OpenAI-style error: the body of every 4xx/5xx reply (server/errors.ts ApiError), and the `data:` line a stream ends with when generation fails after it started. */
export interface ErrorReply {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** What a chat stream's `data:` line holds (before `[DONE]`). */
export type ChatStreamData = ChatCompletionChunk | ErrorReply;

/** OpenAI's legacy logprobs object (POST /v1/completions `logprobs: N`, or `echo` scoring). */
export interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: Record<string, number>[] | null;
  text_offset: number[];
}

export interface TextCompletionReply {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  system_fingerprint: string;
  choices: { index: number; text: string; logprobs: LegacyLogprobs | null; finish_reason: FinishReason }[];
  usage: Usage;
  /** absent when the prompt itself is scored (`echo` with no answer) */
  timings?: LlamaTimings;
}

export interface ModelObject {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

export interface ModelListReply {
  object: "list";
  data: ModelObject[];
}
