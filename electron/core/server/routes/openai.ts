import crypto from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type Engine, type GenerateEvent, type GenerateRequest, type GenerateResult, type TokenLogprob } from "../../inference/engine.js";
import type { TurnContext, TurnOrigin } from "../../rollout/rollout.js";
import { beginChatTurn, rlBodyFields, SSE_HEADERS, type ChatTurn } from "./chatTurn.js";
import { SseWriter } from "../sseWriter.js";
import { abortWhenClientLeaves } from "../clientAbort.js";
import { failGeneration } from "./generationFailure.js";
import { ApiError, badRequest } from "../errors.js";
import { parseChatRequest, type ChatCompletionRequest } from "./openaiSchema.js";
import { generationParams } from "./generationParams.js";
import { applyResponseFormat } from "./responseFormat.js";
import { timingsOf, usageOf } from "./replyFigures.js";
import type { ChatCompletionChunk, ChatCompletionReply, ChatLogprob, ModelListReply, ModelObject } from "../../api/openai.js";

import type { PlannedBlock } from "../../rollout/rollout.js";

type ChunkChoice = ChatCompletionChunk["choices"][number];

/** The rollout as the /v1 route uses it (electron/core/rollout/rollout.ts implements it). */
export interface TurnRecorder {
  beginTurn(origin: TurnOrigin): TurnContext;
  completeTurn(ctx: TurnContext, result: Omit<GenerateResult, "logprobs" | "cachedPromptTokens">): void;
  abortTurn(ctx: TurnContext, reason: string): void;
  /** The client stopped a stream: the turn with what it was sent, marked stopped (absent: stopped turns are aborted). */
  stopTurn?(ctx: TurnContext, partial: Omit<GenerateResult, "logprobs" | "cachedPromptTokens" | "toolCalls" | "timings">): void;
  /** The preference block the request's prompt gets (main turns; electron/core/preferences/); absent or null: none. */
  preferencesFor?(origin: Pick<TurnOrigin, "headers" | "bodyFields" | "fromUi">, countTokens: (text: string) => number): PlannedBlock | null;
}

/** For a core without a store: ids only, nothing recorded. */
export function ephemeralRecorder(): TurnRecorder {
  return {
    beginTurn: (o) => {
      const h = o.headers["x-session-id"];
      const sid = (Array.isArray(h) ? h[0] : h) ?? crypto.randomUUID();
      return { sessionId: sid, turnId: crypto.randomUUID(), turnType: o.fromUi ? "main" : "side", sessionDone: false };
    },
    completeTurn: () => {},
    abortTurn: () => {},
  };
}

export interface OpenAiRoutesOptions {
  engine: Engine;
  rollout?: TurnRecorder;
  /** Answer length when a request sets no max_tokens (a setting): bounds runaway answers from models that rarely stop. */
  defaultMaxTokens?: () => number | undefined;
}

export function toGenerateRequest(body: ChatCompletionRequest, defaultMaxTokens?: number, vocabSize?: number | null): GenerateRequest {
  const tools = body.tools?.map((t) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters }));
  let toolChoice: GenerateRequest["toolChoice"] = "auto";
  const tc = body.tool_choice;
  if (tc) {
    toolChoice = typeof tc === "string" ? tc : { name: tc.function.name };
    if (toolChoice !== "auto" && toolChoice !== "none" && !tools?.length) throw badRequest("tool_choice needs tools.", "tool_choice");
    if (typeof toolChoice === "object" && !tools!.some((t) => t.name === (toolChoice as { name: string }).name))
      throw badRequest(`tool_choice names '${toolChoice.name}', which is not in tools.`, "tool_choice");
  }
  if (body.top_logprobs != null && body.top_logprobs > 0 && !body.logprobs) throw badRequest("top_logprobs needs logprobs: true.", "top_logprobs");
  return {
    messages: body.messages,
    tools,
    toolChoice,
    ...generationParams(body, defaultMaxTokens, vocabSize),
    topLogprobs: body.logprobs ? (body.top_logprobs ?? 0) : 0,
    ...(body.parallel_tool_calls != null ? { parallelToolCalls: body.parallel_tool_calls } : {}),
  };
}

const bytesOf = (s: string) => Array.from(Buffer.from(s, "utf8"));

function logprobEntries(infos: TokenLogprob[]): ChatLogprob[] {
  return infos.map((i) => ({
    token: i.text,
    logprob: i.logprob,
    bytes: bytesOf(i.text),
    top_logprobs: i.top.map((t) => ({ token: t.text, logprob: t.logprob, bytes: bytesOf(t.text) })),
  }));
}

/** The chat answer on its way out: one JSON reply, or an SSE stream of chunks as the engine's events arrive. */
class ChatAnswer {
  readonly stream: boolean;
  private readonly id: string;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly sse: SseWriter;
  private firstContentSent = false;

  constructor(
    private readonly reply: FastifyReply,
    private readonly turn: ChatTurn,
    private readonly model: string,
    private readonly body: ChatCompletionRequest,
  ) {
    this.stream = body.stream === true;
    this.id = `chatcmpl-${turn.ctx.turnId}`;
    this.sse = new SseWriter(reply.raw);
  }

  private chunk(
    delta: ChunkChoice["delta"],
    extra: Partial<Pick<ChunkChoice, "logprobs" | "finish_reason">> = {},
    top: Pick<ChatCompletionChunk, "timings"> = {},
  ): string {
    const { id, created, model } = this;
    return `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: null, ...extra }], ...top } satisfies ChatCompletionChunk)}\n\n`;
  }

  /** The answer begins (the adapter that answers is known): headers, and a stream's first chunk. */
  start(adapter: string): void {
    if (!this.stream) return void this.reply.headers(this.turn.headers(adapter));
    this.reply.raw.writeHead(200, { ...SSE_HEADERS, ...this.turn.headers(adapter) });
    this.sse.write(this.chunk({ role: "assistant", content: "" }));
    this.sse.flush();
  }

  /** One engine event as a stream chunk. */
  event(ev: GenerateEvent): void {
    if (ev.type === "content") {
      const lp = this.body.logprobs ? { logprobs: { content: logprobEntries(ev.logprobs), refusal: null } } : {};
      if (ev.text || this.body.logprobs) this.sse.write(this.chunk({ content: ev.text }, lp));
      if (!this.firstContentSent) {
        this.firstContentSent = true;
        this.sse.flush(); // time to first token is never delayed
      }
    } else if (ev.type === "toolCall")
      this.sse.write(this.chunk({ tool_calls: [{ index: ev.index, id: ev.id, type: "function", function: { name: ev.name, arguments: "" } }] }));
    else this.sse.write(this.chunk({ tool_calls: [{ index: ev.index, function: { arguments: ev.text } }] }));
  }

  /** A stream's error event, once generation failed after the stream began. */
  error(message: string): void {
    this.sse.write(`data: ${JSON.stringify(new ApiError(500, message).toJSON())}\n\n`);
    this.sse.flush();
  }

  /** The finished answer: the stream's last chunks, or the whole reply. */
  finish(result: GenerateResult): FastifyReply | ChatCompletionReply {
    const usage = usageOf(result);
    const timings = timingsOf(result);
    if (this.stream) {
      const { id, created, model } = this;
      this.sse.write(this.chunk({}, { finish_reason: result.finishReason }, { timings }));
      if (this.body.stream_options?.include_usage === true)
        this.sse.write(
          `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage } satisfies ChatCompletionChunk)}\n\n`,
        );
      this.sse.write("data: [DONE]\n\n");
      this.sse.flush();
      this.reply.raw.end();
      return this.reply;
    }
    return this.wholeReply(result, usage, timings);
  }

  private wholeReply(result: GenerateResult, usage: ChatCompletionReply["usage"], timings: ChatCompletionReply["timings"]): ChatCompletionReply {
    const toolCalls = result.toolCalls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: c.arguments } }));
    const message = {
      role: "assistant" as const,
      content: result.text === "" && toolCalls.length > 0 ? null : result.text,
      refusal: null,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    };
    const logprobs = this.body.logprobs ? { content: logprobEntries(result.logprobs), refusal: null } : null;
    return {
      id: this.id,
      object: "chat.completion",
      created: this.created,
      model: this.model,
      system_fingerprint: `clawrl-${result.adapter}`,
      choices: [{ index: 0, message, logprobs, finish_reason: result.finishReason }],
      usage,
      timings,
    } satisfies ChatCompletionReply;
  }
}

/** Registers `/v1/chat/completions` and `/v1/models` (OpenAI wire format). */
export function registerOpenAiRoutes(app: FastifyInstance, opts: OpenAiRoutesOptions): void {
  const { engine } = opts;
  const rollout = opts.rollout ?? ephemeralRecorder();

  const modelObject = (): ModelObject => ({ id: engine.modelId, object: "model", created: 0, owned_by: "clawrl" });
  app.get("/v1/models", async (): Promise<ModelListReply> => ({ object: "list", data: [modelObject()] }));
  app.get<{ Params: { id: string } }>("/v1/models/:id", async (req) => {
    if (req.params.id !== engine.modelId)
      throw new ApiError(404, `The model '${req.params.id}' does not exist.`, "invalid_request_error", "model", "model_not_found");
    return modelObject();
  });

  // parse → the generation → the turn → run → answer (a stream or one reply)
  app.post("/v1/chat/completions", async (req: FastifyRequest, reply: FastifyReply) => {
    const body = parseChatRequest(req.body);
    const genReq = toGenerateRequest(body, opts.defaultMaxTokens?.(), engine.vocabSize);
    await applyResponseFormat(engine, genReq, body.response_format);
    const turn = beginChatTurn(engine, rollout, req, genReq, rlBodyFields(body), "messages");
    const answer = new ChatAnswer(reply, turn, engine.modelId, body);
    const signal = abortWhenClientLeaves(reply);
    if (answer.stream) reply.hijack();
    let result: GenerateResult;
    try {
      result = await engine.generate(
        turn.prompt.served,
        { signal, onStart: ({ adapter }) => answer.start(adapter), onEvent: answer.stream ? (ev) => (turn.seen(ev), answer.event(ev)) : undefined },
        turn.prompt.prepared,
      );
    } catch (err) {
      const abortTurn = (reason: string) => rollout.abortTurn(turn.ctx, reason);
      return failGeneration({
        err,
        signal,
        stream: answer.stream,
        reply,
        abortTurn,
        stopTurn: () => turn.stop(),
        streamError: (message) => answer.error(message),
      });
    }
    const { logprobs: _infos, cachedPromptTokens: _cached, ...done } = result;
    rollout.completeTurn(turn.ctx, done);
    return answer.finish(result);
  });
}
