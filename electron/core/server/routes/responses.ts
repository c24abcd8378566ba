import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { ChatMessage } from "../../api/chatTypes.js";
import type { ResponseFunctionCall, ResponseObject, ResponseOutputItem, ResponseOutputMessage, ResponseStreamEvent } from "../../api/responses.js";
import type { Engine, GenerateEvent, GenerateRequest, GenerateResult } from "../../inference/engine.js";
import { answerMessage } from "../../rollout/messages.js";
import type { ResponseStore, StoredResponse } from "../../store/responses.js";
import { abortWhenClientLeaves } from "../clientAbort.js";
import { failGeneration } from "./generationFailure.js";
import { badRequest, notFound, parseBody } from "../errors.js";
import { beginChatTurn, rlBodyFields, SSE_HEADERS } from "./chatTurn.js";
import { SseWriter } from "../sseWriter.js";
import { ephemeralRecorder, toGenerateRequest, type TurnRecorder } from "./openai.js";
import { parseChatRequest } from "./openaiSchema.js";
import { applyResponseFormat } from "./responseFormat.js";

/**
 * POST /v1/responses: OpenAI's Responses API, the part a local chat model can serve: text or
 * message-item input, `instructions`, function tools (function_call output items; their results
 * come back as function_call_output input items), `previous_response_id` (stored responses,
 * store/responses.ts), streaming with its typed events. The request becomes a chat request and
 * goes through chat's path: validated by chat's schema, the same generation request
 * (toGenerateRequest), preference block, engine and rollout, so its turns are recorded and
 * learned from like chat turns. Strict: an unknown or unsupported field is a 400 naming it.
 */
const opt = <T extends z.ZodType>(t: T) => t.nullable().optional();
const functionName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, underscores or dashes");
const inputText = z.strictObject({ type: z.literal("input_text"), text: z.string() });
// An earlier answer fed back as input: its extra fields (annotations, logprobs) are the reply's own and ignored.
const outputText = z.strictObject({
  type: z.literal("output_text"),
  text: z.string(),
  annotations: z.array(z.unknown()).optional(),
  logprobs: z.array(z.unknown()).optional(),
});
const itemStatus = z.enum(["in_progress", "completed", "incomplete"]).optional();
const messageItem = z.strictObject({
  type: z.literal("message").optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(z.union([inputText, outputText], { error: "content parts must be input_text or output_text (no images or files)" }))]),
  id: z.string().optional(),
  status: itemStatus,
});
const functionCallItem = z.strictObject({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: functionName,
  arguments: z.string(),
  id: z.string().optional(),
  status: itemStatus,
});
const functionCallOutputItem = z.strictObject({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(inputText)]),
  id: z.string().optional(),
  status: itemStatus,
});
const inputItem = z.union([messageItem, functionCallItem, functionCallOutputItem], {
  error: "each input item must be a message, a function_call or a function_call_output",
});

const responsesRequest = z.strictObject({
  model: opt(z.string()),
  // the items are checked apart (chatMessagesOf), so a bad one's error names it rather than the whole input
  input: z.union([z.string(), z.array(z.unknown()).min(1, "must hold at least one item")], { error: "must be a string or an array of input items" }),
  instructions: opt(z.string()),
  previous_response_id: opt(z.string()),
  tools: opt(
    z.array(
      z.strictObject({
        type: z.literal("function", { error: "only function tools are supported" }),
        name: functionName,
        description: opt(z.string()),
        parameters: opt(z.record(z.string(), z.unknown())),
        strict: opt(z.boolean()),
      }),
    ),
  ),
  tool_choice: opt(z.union([z.enum(["none", "auto", "required"]), z.strictObject({ type: z.literal("function"), name: functionName })])),
  parallel_tool_calls: opt(z.boolean()),
  stream: opt(z.boolean()),
  temperature: opt(z.number().min(0).max(2)),
  top_p: opt(z.number().min(0).max(1)),
  max_output_tokens: opt(z.number().int().min(1)),
  store: opt(z.boolean()),
  // The OpenAI Agents SDK always sends one (empty unless a tool asks for extra output); no extra output is produced here.
  include: opt(z.array(z.string()).max(0, "no 'include' values are supported (the extra outputs they name are not produced here)")),
  metadata: opt(z.record(z.string(), z.string())),
  user: opt(z.string()),
  // The Responses API names structured output text.format, with json_schema's fields flat.
  text: opt(
    z.strictObject({
      format: z
        .discriminatedUnion("type", [
          z.strictObject({ type: z.literal("text") }),
          z.strictObject({ type: z.literal("json_object") }),
          z.strictObject({
            type: z.literal("json_schema"),
            name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, underscores or dashes"),
            description: z.string().optional(),
            schema: z.record(z.string(), z.unknown()).optional(),
            strict: z.boolean().nullable().optional(),
          }),
        ])
        .optional(),
    }),
  ),
  truncation: opt(z.literal("disabled", { error: "only 'disabled' is supported" })),
  // rl-training-headers body fallbacks (method.md), as on chat
  session_id: z.unknown().optional(),
  turn_type: z.unknown().optional(),
  session_done: z.unknown().optional(),
});
type ResponsesRequest = z.infer<typeof responsesRequest>;

const textOf = (c: string | Array<{ text: string }>) => (typeof c === "string" ? c : c.map((p) => p.text).join(""));

/** The request's input items as chat messages: consecutive function calls join the assistant message before them. */
function chatMessagesOf(input: ResponsesRequest["input"]): ChatMessage[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  const out: ChatMessage[] = [];
  for (const [i, raw] of input.entries()) {
    const item = parseBody(inputItem, raw, { at: ["input", i] });
    if (item.type === "function_call") {
      const call = { id: item.call_id, type: "function" as const, function: { name: item.name, arguments: item.arguments } };
      const last = out.at(-1);
      if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls ?? []), call];
      else out.push({ role: "assistant", content: "", tool_calls: [call] });
    } else if (item.type === "function_call_output") out.push({ role: "tool", content: textOf(item.output), tool_call_id: item.call_id });
    else out.push({ role: item.role, content: textOf(item.content) });
  }
  return out;
}

const compactId = (s: string) => s.replace(/-/g, "");

export interface ResponseRoutesOptions {
  engine: Engine;
  rollout?: TurnRecorder;
  store: ResponseStore;
  defaultMaxTokens?: () => number | undefined;
}

type TextFormat = NonNullable<ResponsesRequest["text"]>["format"];

/** What a Responses request asks the engine for: the conversation so far (the previous response's, then this input), as a generation request. */
interface ResponsesGeneration {
  conversation: ChatMessage[];
  genReq: GenerateRequest;
  textFormat: TextFormat;
}

/** The request as chat's: checked by chat's schema (roles, tool calls and their answers), made into the same generation request. */
async function responsesGeneration(
  engine: Engine,
  body: ResponsesRequest,
  previous: StoredResponse | null,
  defaultMaxTokens: number | undefined,
): Promise<ResponsesGeneration> {
  // Instructions apply to this request only: a follow-up's own (or none) replace the previous ones.
  const conversation = [...(previous?.conversation ?? []), ...chatMessagesOf(body.input)];
  const messages: ChatMessage[] = body.instructions ? [{ role: "system", content: body.instructions }, ...conversation] : conversation;
  const tools = body.tools ?? [];
  const toolChoice = body.tool_choice ?? "auto";
  const chatBody = parseChatRequest({
    messages,
    ...(tools.length
      ? {
          tools: tools.map((t) => ({
            type: "function",
            function: {
              name: t.name,
              ...(t.description != null ? { description: t.description } : {}),
              ...(t.parameters != null ? { parameters: t.parameters } : {}),
            },
          })),
        }
      : {}),
    ...(body.tool_choice ? { tool_choice: typeof toolChoice === "string" ? toolChoice : { type: "function", function: { name: toolChoice.name } } } : {}),
    ...(body.parallel_tool_calls != null && tools.length ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
    ...(body.temperature != null ? { temperature: body.temperature } : {}),
    ...(body.top_p != null ? { top_p: body.top_p } : {}),
    ...(body.max_output_tokens != null ? { max_completion_tokens: body.max_output_tokens } : {}),
  });
  const genReq = toGenerateRequest(chatBody, defaultMaxTokens, engine.vocabSize);
  // text.format is chat's response_format under another name: the same grammar holds the answer.
  const textFormat = body.text?.format;
  await applyResponseFormat(
    engine,
    genReq,
    textFormat?.type === "json_schema"
      ? {
          type: "json_schema",
          json_schema: { name: textFormat.name, description: textFormat.description, schema: textFormat.schema, strict: textFormat.strict },
        }
      : textFormat,
    "text.format",
  );
  return { conversation, genReq, textFormat };
}

/** The response object before the answer: what the request asked, status in_progress. */
function responseBase(id: string, model: string, body: ResponsesRequest, gen: ResponsesGeneration): ResponseObject {
  const toolChoice = body.tool_choice ?? "auto";
  return {
    id,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: "in_progress",
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: body.store !== false,
    temperature: gen.genReq.temperature ?? 1,
    text: { format: gen.textFormat ?? { type: "text" } },
    tool_choice: typeof toolChoice === "string" ? toolChoice : { type: "function", name: toolChoice.name },
    tools: (body.tools ?? []).map((t) => ({
      type: "function",
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters ?? null,
      strict: t.strict ?? null,
    })),
    top_p: gen.genReq.topP ?? 1,
    truncation: "disabled",
    usage: null,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

/** The finished response: its output items (the message, then the function calls), status and usage. */
function finalResponse(base: ResponseObject, msgId: string, result: GenerateResult): ResponseObject {
  const incomplete = result.finishReason === "length";
  const itemStatus = incomplete ? "incomplete" : "completed";
  const output: ResponseOutputItem[] = [];
  if (result.text !== "" || result.toolCalls.length === 0)
    output.push({
      type: "message",
      id: msgId,
      status: itemStatus,
      role: "assistant",
      content: [{ type: "output_text", text: result.text, annotations: [], logprobs: [] }],
    });
  for (const c of result.toolCalls)
    output.push({ type: "function_call", id: `fc_${c.id}`, call_id: c.id, name: c.name, arguments: c.arguments, status: "completed" });
  return {
    ...base,
    status: incomplete ? "incomplete" : "completed",
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    output,
    usage: {
      input_tokens: result.promptTokens.length,
      input_tokens_details: { cached_tokens: result.cachedPromptTokens },
      output_tokens: result.responseTokens.length,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: result.promptTokens.length + result.responseTokens.length,
    },
  };
}

/** A streamed response's typed events, numbered in order. */
class ResponseEvents {
  private seq = 0;
  readonly live: LiveOutput;

  constructor(
    private readonly reply: FastifyReply,
    private readonly sse: SseWriter,
    msgId: string,
  ) {
    this.live = new LiveOutput((type, fields) => this.emit(type, fields), msgId);
  }

  emit(type: string, fields: Record<string, unknown>): void {
    const ev: ResponseStreamEvent = { type, sequence_number: this.seq++, ...fields };
    this.sse.write(`event: ${type}\ndata: ${JSON.stringify(ev)}\n\n`);
  }

  start(base: ResponseObject, headers: Record<string, string>): void {
    this.reply.raw.writeHead(200, { ...SSE_HEADERS, ...headers });
    this.emit("response.created", { response: base });
    this.emit("response.in_progress", { response: base });
    this.sse.flush();
  }

  failed(base: ResponseObject, message: string): void {
    this.emit("response.failed", { response: { ...base, status: "failed", error: { code: "server_error", message } } });
    this.sse.flush();
  }

  finish(final: ResponseObject): FastifyReply {
    this.live.finish(final);
    this.emit(final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final });
    this.sse.flush();
    this.reply.raw.end();
    return this.reply;
  }
}

export function registerResponseRoutes(app: FastifyInstance, opts: ResponseRoutesOptions): void {
  const { engine, store } = opts;
  const rollout = opts.rollout ?? ephemeralRecorder();

  app.get<{ Params: { id: string } }>("/v1/responses/:id", async (req) => {
    const r = store.get(req.params.id);
    if (!r) throw notFound(`No response with id '${req.params.id}' is stored.`);
    return r.response;
  });
  app.delete<{ Params: { id: string } }>("/v1/responses/:id", async (req) => {
    if (!store.delete(req.params.id)) throw notFound(`No response with id '${req.params.id}' is stored.`);
    return { id: req.params.id, object: "response", deleted: true };
  });

  // parse → the generation (as chat's) → the turn → run → answer (typed events or one response)
  app.post("/v1/responses", async (req: FastifyRequest, reply: FastifyReply) => {
    const body = parseBody(responsesRequest, req.body);
    const previous = body.previous_response_id ? store.get(body.previous_response_id) : null;
    if (body.previous_response_id && !previous)
      throw badRequest(`Previous response with id '${body.previous_response_id}' not found.`, "previous_response_id", "previous_response_not_found");
    const gen = await responsesGeneration(engine, body, previous, opts.defaultMaxTokens?.());
    const turn = beginChatTurn(engine, rollout, req, gen.genReq, rlBodyFields(body), "input");
    const msgId = `msg_${compactId(turn.ctx.turnId)}`;
    const base = responseBase(`resp_${compactId(turn.ctx.turnId)}`, engine.modelId, body, gen);
    const signal = abortWhenClientLeaves(reply);
    const events = body.stream === true ? new ResponseEvents(reply, new SseWriter(reply.raw), msgId) : null;
    if (events) reply.hijack();

    let result: GenerateResult;
    try {
      const onStart = ({ adapter }: { adapter: string }) => (events ? events.start(base, turn.headers(adapter)) : void reply.headers(turn.headers(adapter)));
      result = await engine.generate(turn.prompt.served, { signal, onStart, onEvent: events ? (ev) => events.live.on(ev) : undefined }, turn.prompt.prepared);
    } catch (err) {
      const abortTurn = (reason: string) => rollout.abortTurn(turn.ctx, reason);
      return failGeneration({ err, signal, stream: events !== null, reply, abortTurn, streamError: (message) => events?.failed(base, message) });
    }

    const { logprobs: _infos, cachedPromptTokens: _cached, ...done } = result;
    rollout.completeTurn(turn.ctx, done);
    const final = finalResponse(base, msgId, result);
    if (base.store)
      store.put({
        response: final,
        conversation: [...gen.conversation, answerMessage(result.text, result.toolCalls)],
        sessionId: turn.ctx.sessionId,
        turnId: turn.ctx.turnId,
      });
    return events ? events.finish(final) : final;
  });
}

/**
 * The streamed output items as the engine's events arrive: the message item opens at the first
 * text and closes before the first function call; each call is an item with its arguments
 * streamed as deltas. `finish` closes what is open with the final texts.
 */
class LiveOutput {
  private index = 0;
  private message: { index: number; text: string } | null = null;
  private messageDone = false;
  private calls = new Map<number, { index: number; item: ResponseFunctionCall }>();
  private openCall: number | null = null;

  constructor(
    private readonly emit: (type: string, fields: Record<string, unknown>) => void,
    private readonly msgId: string,
  ) {}

  private messageItem(status: ResponseOutputMessage["status"], text: string): ResponseOutputMessage {
    return {
      type: "message",
      id: this.msgId,
      status,
      role: "assistant",
      content: status === "in_progress" && text === "" ? [] : [{ type: "output_text", text, annotations: [], logprobs: [] }],
    };
  }

  private openMessage(): { index: number; text: string } {
    if (!this.message) {
      this.message = { index: this.index++, text: "" };
      this.emit("response.output_item.added", { output_index: this.message.index, item: this.messageItem("in_progress", "") });
      this.emit("response.content_part.added", {
        item_id: this.msgId,
        output_index: this.message.index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] },
      });
    }
    return this.message;
  }

  private closeMessage(status: ResponseOutputMessage["status"]): void {
    if (!this.message || this.messageDone) return;
    this.messageDone = true;
    const { index, text } = this.message;
    const part = { type: "output_text", text, annotations: [], logprobs: [] };
    this.emit("response.output_text.done", { item_id: this.msgId, output_index: index, content_index: 0, text, logprobs: [] });
    this.emit("response.content_part.done", { item_id: this.msgId, output_index: index, content_index: 0, part });
    this.emit("response.output_item.done", { output_index: index, item: this.messageItem(status, text) });
  }

  private closeCall(): void {
    if (this.openCall === null) return;
    const c = this.calls.get(this.openCall)!;
    this.openCall = null;
    c.item.status = "completed";
    this.emit("response.function_call_arguments.done", { item_id: c.item.id, output_index: c.index, name: c.item.name, arguments: c.item.arguments });
    this.emit("response.output_item.done", { output_index: c.index, item: { ...c.item } });
  }

  on(ev: GenerateEvent): void {
    if (ev.type === "content") {
      if (!ev.text || this.messageDone) return;
      const m = this.openMessage();
      m.text += ev.text;
      this.emit("response.output_text.delta", { item_id: this.msgId, output_index: m.index, content_index: 0, delta: ev.text, logprobs: [] });
    } else if (ev.type === "toolCall") {
      this.closeMessage("completed");
      this.closeCall();
      const item: ResponseFunctionCall = { type: "function_call", id: `fc_${ev.id}`, call_id: ev.id, name: ev.name, arguments: "", status: "in_progress" };
      const index = this.index++;
      this.calls.set(ev.index, { index, item });
      this.openCall = ev.index;
      this.emit("response.output_item.added", { output_index: index, item: { ...item } });
    } else {
      const c = this.calls.get(ev.index);
      if (!c) return;
      c.item.arguments += ev.text;
      this.emit("response.function_call_arguments.delta", { item_id: c.item.id, output_index: c.index, delta: ev.text });
    }
  }

  /** Closes the open items; a reply with neither text nor calls still gets its (empty) message, as the final response has. */
  finish(final: ResponseObject): void {
    const msg = final.output.find((o): o is ResponseOutputMessage => o.type === "message");
    if (msg && !this.message) this.openMessage();
    if (this.message && msg) this.message.text = msg.content[0]?.text ?? this.message.text;
    this.closeMessage(msg?.status ?? "completed");
    // The final arguments are the parsed call's (the stream's deltas add up to them).
    for (const fc of final.output)
      if (fc.type === "function_call") for (const c of this.calls.values()) if (c.item.call_id === fc.call_id) c.item.arguments = fc.arguments;
    this.closeCall();
  }
}
