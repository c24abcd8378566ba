import type { ChatStreamData, FinishReason, ModelListReply } from "../../../electron/core/api/openai.js";
import type { ChatMessage as WireMessage, ChatToolCall } from "../../../electron/core/api/chatTypes.js";
import type { OpenAiToolsReply } from "../../../electron/core/api/tools.js";
import { errorFromResponse, type CoreClient } from "./client.js";
import { speedOfLlamaTimings, type AnswerSpeed } from "../format/turns.js";

/** A message of the conversation as sent to /v1 (assistant tool calls and `tool` results included). */
export type ChatMessage = WireMessage;

/** The tools offered to the model (OpenAI `tools`). */
export type ChatTool = OpenAiToolsReply["tools"][number];

/** What streamChat needs of the core's client: its authorised fetch and a JSON GET (CoreClient has both). */
export type ChatTransport = Pick<CoreClient, "raw" | "get">;

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
  /** tools the model may call; absent or empty: none */
  tools?: ChatTool[];
  /** "none": the model answers in words even though tools are declared (the agent loop's last step) */
  tool_choice?: "auto" | "none";
}

/** One streamed answer: its text, the tool calls it made (assembled from the deltas) and why it ended. */
export interface ChatResult {
  text: string;
  info: TurnInfo;
  toolCalls: ChatToolCall[];
  finishReason: FinishReason | null;
}

export interface StreamHandlers {
  onStart?(info: TurnInfo): void;
  onDelta(text: string): void;
  /** the model named by the first chunk */
  onModel?(model: string): void;
}

let modelId: Promise<string> | null = null;

/** The served model's id from /v1/models (asked once; the OpenAI wire format requires `model`). */
export function servedModelId(client: ChatTransport): Promise<string> {
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
export async function streamChat(
  client: ChatTransport,
  messages: ChatMessage[],
  sessionId: string | null,
  handlers: StreamHandlers,
  signal: AbortSignal,
  params: ChatParams = {},
): Promise<ChatResult> {
  const model = await servedModelId(client);
  const headers: Record<string, string> = { "Content-Type": "application/json", "X-Clawrl-Client": "ui" };
  if (sessionId) headers["X-Session-Id"] = sessionId;
  const { tools, tool_choice, ...rest } = params;
  const body: Record<string, unknown> = { model, messages, stream: true, ...rest };
  if (tools && tools.length > 0) {
    body.tools = tools;
    if (tool_choice) body.tool_choice = tool_choice;
  }
  const res = await client.raw("/v1/chat/completions", {
    method: "POST",
    headers,
    body: JSON.stringify(body),
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
  let finishReason: FinishReason | null = null;
  // Tool calls arrive in pieces: the first delta of a call names it (id, name), later ones add argument text.
  const calls: { id: string; name: string; args: string }[] = [];
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
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    const delta = choice.delta.content;
    if (delta) {
      text += delta;
      handlers.onDelta(delta);
    }
    for (const d of choice.delta.tool_calls ?? []) {
      const c = (calls[d.index] ??= { id: "", name: "", args: "" });
      if (d.id) c.id = d.id;
      if (d.function.name) c.name += d.function.name;
      c.args += d.function.arguments ?? "";
    }
  }
  const toolCalls: ChatToolCall[] = calls
    .filter((c) => c && c.name)
    .map((c, i) => ({ id: c.id || `call_ui_${Date.now().toString(36)}_${i}`, type: "function", function: { name: c.name, arguments: c.args || "{}" } }));
  return { text, info, toolCalls, finishReason };
}
