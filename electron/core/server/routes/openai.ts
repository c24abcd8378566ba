import crypto from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ChatMessage } from "../../api/chatTypes.js";
import {
  ContextLengthError,
  type Engine,
  type GenerateEvent,
  type GenerateRequest,
  type GenerateResult,
  type TokenLogprob,
} from "../../inference/engine.js";
import type { TurnContext, TurnOrigin } from "../../rollout/rollout.js";
import { SseWriter } from "../sseWriter.js";
import { abortWhenClientLeaves } from "../clientAbort.js";
import { failGeneration } from "./generationFailure.js";
import { ApiError, badRequest } from "../errors.js";
import { parseChatRequest, type ChatCompletionRequest } from "./openaiSchema.js";
import { generationParams } from "./generationParams.js";
import { applyResponseFormat } from "./responseFormat.js";
import { timingsOf, usageOf } from "./replyFigures.js";
import type { ChatCompletionChunk, ChatCompletionReply, ChatLogprob, ModelListReply, ModelObject } from "../../api/openai.js";

type ChunkChoice = ChatCompletionChunk["choices"][number];
import type { PlannedBlock } from "../../preferences/block.js";
import { prepareChatPrompt, tokenCounter } from "../../preferences/inject.js";

/** The rollout as the /v1 route uses it (electron/core/rollout/rollout.ts implements it). */
export interface TurnRecorder {
  beginTurn(origin: TurnOrigin): TurnContext;
  completeTurn(ctx: TurnContext, result: Omit<GenerateResult, "logprobs" | "cachedPromptTokens">): void;
  abortTurn(ctx: TurnContext, reason: string): void;
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
    messages: body.messages as ChatMessage[],
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

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Registers `/v1/chat/completions` and `/v1/models` (OpenAI wire format). */
export function registerOpenAiRoutes(app: FastifyInstance, opts: OpenAiRoutesOptions): void {
  const { engine } = opts;
  const rollout = opts.rollout ?? ephemeralRecorder();

  const modelObject = (): ModelObject => ({ id: engine.modelId, object: "model", created: 0, owned_by: "clawrl" });
  app.get("/v1/models", async (): Promise<ModelListReply> => ({ object: "list", data: [modelObject()] }));
  app.get<{ Params: { id: string } }>("/v1/models/:id", async (req) => {
    if (req.params.id !== engine.modelId) throw new ApiError(404, `The model '${req.params.id}' does not exist.`, "invalid_request_error", "model", "model_not_found");
    return modelObject();
  });

  app.post("/v1/chat/completions", async (req: FastifyRequest, reply: FastifyReply) => {
    const body = parseChatRequest(req.body);
    const genReq = toGenerateRequest(body, opts.defaultMaxTokens?.(), engine.vocabSize);
    await applyResponseFormat(engine, genReq, body.response_format);
    const bodyFields = { session_id: body.session_id, turn_type: body.turn_type, session_done: body.session_done };
    const fromUi = headerValue(req.headers["x-clawrl-client"]) === "ui";
    let prompt: ReturnType<typeof prepareChatPrompt>;
    try {
      // The served prompt may carry the preference block; the turn records the client's messages and the block apart.
      prompt = prepareChatPrompt(engine, genReq, rollout.preferencesFor?.({ headers: req.headers, bodyFields, fromUi }, tokenCounter(engine)) ?? null);
    } catch (err) {
      if (err instanceof ContextLengthError) throw badRequest(err.message, "messages", "context_length_exceeded");
      throw err;
    }

    const prepared = prompt.prepared;
    const ctx = rollout.beginTurn({
      headers: req.headers,
      bodyFields,
      fromUi,
      messages: genReq.messages,
      ...(prompt.preferences ? { preferences: prompt.preferences, clientPromptTokens: prompt.clientPromptTokens } : {}),
    });

    const id = `chatcmpl-${ctx.turnId}`;
    const created = Math.floor(Date.now() / 1000);
    const model = engine.modelId;
    const turnHeaders = (adapter: string) => ({
      "X-Clawrl-Session-Id": ctx.sessionId,
      "X-Clawrl-Turn-Id": ctx.turnId,
      "X-Clawrl-Adapter": adapter,
      // How many standing preferences the served prompt carried (the chat shows it on the answer).
      "X-Clawrl-Preferences": String(prompt.preferences?.ids.length ?? 0),
    });

    const signal = abortWhenClientLeaves(reply);

    const stream = body.stream === true;
    const includeUsage = stream && body.stream_options?.include_usage === true;
    const chunk = (delta: ChunkChoice["delta"], extra: Partial<Pick<ChunkChoice, "logprobs" | "finish_reason">> = {}, top: Pick<ChatCompletionChunk, "timings"> = {}) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: null, ...extra }], ...top } satisfies ChatCompletionChunk)}\n\n`;
    const sse = new SseWriter(reply.raw);
    const write = (s: string) => sse.write(s);
    let firstContentSent = false;

    if (stream) reply.hijack();

    let result: GenerateResult;
    try {
      result = await engine.generate(
        prompt.served,
        {
          signal,
          onStart: ({ adapter }) => {
            if (stream) {
              reply.raw.writeHead(200, {
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                Connection: "keep-alive",
                "X-Accel-Buffering": "no",
                ...turnHeaders(adapter),
              });
              write(chunk({ role: "assistant", content: "" }));
              sse.flush();
            } else reply.headers(turnHeaders(adapter));
          },
          onEvent: stream
            ? (ev: GenerateEvent) => {
                if (ev.type === "content") {
                  const lp = body.logprobs ? { logprobs: { content: logprobEntries(ev.logprobs), refusal: null } } : {};
                  if (ev.text || body.logprobs) write(chunk({ content: ev.text }, lp));
                  if (!firstContentSent) {
                    firstContentSent = true;
                    sse.flush(); // time to first token is never delayed
                  }
                } else if (ev.type === "toolCall")
                  write(chunk({ tool_calls: [{ index: ev.index, id: ev.id, type: "function", function: { name: ev.name, arguments: "" } }] }));
                else write(chunk({ tool_calls: [{ index: ev.index, function: { arguments: ev.text } }] }));
              }
            : undefined,
        },
        prepared,
      );
    } catch (err) {
      return failGeneration({
        err,
        signal,
        stream,
        reply,
        abortTurn: (reason) => rollout.abortTurn(ctx, reason),
        streamError: (message) => {
          write(`data: ${JSON.stringify(new ApiError(500, message).toJSON())}\n\n`);
          sse.flush();
        },
      });
    }

    const { logprobs: infos, cachedPromptTokens, ...turn } = result;
    rollout.completeTurn(ctx, turn);
    const usage = usageOf(result);
    const timings = timingsOf(result);
    const toolCalls = result.toolCalls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: c.arguments } }));

    if (stream) {
      write(chunk({}, { finish_reason: result.finishReason }, { timings }));
      if (includeUsage) write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage } satisfies ChatCompletionChunk)}\n\n`);
      write("data: [DONE]\n\n");
      sse.flush();
      reply.raw.end();
      return reply;
    }
    return {
      id,
      object: "chat.completion",
      created,
      model,
      system_fingerprint: `clawrl-${result.adapter}`,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: result.text === "" && toolCalls.length > 0 ? null : result.text,
            refusal: null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          logprobs: body.logprobs ? { content: logprobEntries(infos), refusal: null } : null,
          finish_reason: result.finishReason,
        },
      ],
      usage,
      timings,
    } satisfies ChatCompletionReply;
  });
}
