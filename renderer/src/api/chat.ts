import type { ChatStreamData, ModelListReply } from "../../../electron/core/api/openai.js";
import { errorFromResponse, type CoreClient } from "./client.js";
import { speedOfLlamaTimings, type AnswerSpeed } from "./shapes.js";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** What the core's response headers say about the turn it served. */
export interface TurnInfo {
  sessionId: string | null;
  turnId: string | null;
  adapter: string | null;
  /** the served model that wrote the answer (the chunks' `model`); null until the first chunk */
  model: string | null;
  /** standing preferences the core added to the prompt */
  preferences: number;
  /** how fast it was written (the last chunk's timings); null until the answer is complete */
  speed: AnswerSpeed | null;
}

/** Generation parameters sent with the request (OpenAI names). */
export interface ChatParams {
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
}

export interface StreamHandlers {
  onStart?(info: TurnInfo): void;
  onDelta(text: string): void;
  /** the model named by the first chunk */
  onModel?(model: string): void;
}

let modelId: Promise<string> | null = null;

/** The served model's id from /v1/models (asked once; the OpenAI wire format requires `model`). */
export function servedModelId(client: CoreClient): Promise<string> {
  modelId ??= client
    .get<ModelListReply>("/v1/models")
    .then((b) => b.data?.[0]?.id ?? "default")
    .catch((e: unknown) => {
      modelId = null; // ask again next time
      throw e;
    });
  return modelId;
}

/** After a model switch: the next request asks /v1/models again. */
export function forgetServedModelId(): void {
  modelId = null;
}

/** Splits an SSE byte stream into the `data:` payloads of its events. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i: number;
    while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i).replace(/^\r?\n\r?\n/, "");
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) yield data;
    }
  }
}

/**
 * Streams one chat completion from the core's OpenAI API. Marked as our UI's main turn
 * (`X-Clawrl-Client: ui`) in the given session (none = the core starts a new one).
 * Resolves with the full text; rejects with ApiError, or AbortError when stopped.
 */
export async function streamChat(client: CoreClient, messages: ChatMessage[], sessionId: string | null, handlers: StreamHandlers, signal: AbortSignal, params: ChatParams = {}): Promise<{ text: string; info: TurnInfo }> {
  const model = await servedModelId(client);
  const headers: Record<string, string> = { "Content-Type": "application/json", "X-Clawrl-Client": "ui" };
  if (sessionId) headers["X-Session-Id"] = sessionId;
  const res = await client.raw("/v1/chat/completions", {
    method: "POST",
    headers,
    body: JSON.stringify({ model, messages, stream: true, ...params }),
    signal,
  });
  if (!res.ok || !res.body) throw await errorFromResponse(res, "Chat request");
  const info: TurnInfo = {
    sessionId: res.headers.get("X-Clawrl-Session-Id"),
    turnId: res.headers.get("X-Clawrl-Turn-Id"),
    adapter: res.headers.get("X-Clawrl-Adapter"),
    model: null,
    preferences: Number(res.headers.get("X-Clawrl-Preferences") ?? 0) || 0,
    speed: null,
  };
  handlers.onStart?.(info);
  let text = "";
  for await (const data of sseData(res.body)) {
    if (data === "[DONE]") break;
    // The core's own stream (api/openai.ts): what is untrusted is only whether a line is JSON.
    let chunk: ChatStreamData | null;
    try {
      chunk = JSON.parse(data) as ChatStreamData | null;
    } catch {
      continue; // a keep-alive or a line we do not understand
    }
    if (typeof chunk !== "object" || chunk === null) continue;
    if ("error" in chunk) throw new Error(chunk.error.message);
    if (chunk.timings) info.speed = speedOfLlamaTimings(chunk.timings);
    if (info.model === null && chunk.model) {
      info.model = chunk.model;
      handlers.onModel?.(chunk.model);
    }
    const delta = chunk.choices[0]?.delta.content;
    if (delta) {
      text += delta;
      handlers.onDelta(delta);
    }
  }
  return { text, info };
}
