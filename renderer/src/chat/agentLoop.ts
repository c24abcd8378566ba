/**
 * The chat's agent loop (issue 29): the model is offered the enabled tools; when its answer
 * calls some, each call is shown, asked about (unless the user allowed that tool for good), run
 * through the core (POST /api/tools/call) or declined, and its result goes back to the model as
 * a `tool` message; the model then continues, up to a step limit. Plain functions over a client
 * (the app's CoreClient, or any object with its `raw`, `get` and `json`), so the loop runs the
 * same in the page and in a test against a real core.
 */
import { GENERATION_LIMITS } from "../../../electron/core/api/generationLimits.js";
import type { ChatToolCall } from "../../../electron/core/api/chatTypes.js";
import { ApiError, messageOf } from "../api/client.js";
import {
  streamChat,
  type ChatMessage,
  type ChatParams,
  type ChatResult,
  type ChatTool,
  type ChatTransport,
  type StreamHandlers,
  type TurnInfo,
} from "../api/chat.js";
import { callTool, DECLINED, splitToolName, type ToolsTransport } from "../api/tools.js";

/**
 * How many rounds of tool calls one answer may make before the model must answer in words. The
 * issue's default; the chat settings the core stores (GenerationView) have no field for it yet.
 */
export const DEFAULT_MAX_TOOL_STEPS = GENERATION_LIMITS.toolSteps.default;

export type LoopClient = ChatTransport & ToolsTransport;

/** The user's answer to one call. */
export type Decision = "once" | "always" | "deny";

export type ToolCallStatus = "waiting" | "running" | "done" | "failed" | "declined" | "stopped";

/** One call as the chat shows it (ToolCallCard). */
export interface ToolCallView {
  id: string;
  /** `server__tool`, as the model called it */
  name: string;
  server: string;
  tool: string;
  /** the model's JSON text */
  arguments: string;
  status: ToolCallStatus;
  /** how it was allowed: by the user now, or by a standing permission */
  approval: "once" | "always" | "standing" | null;
  /** the text the model gets back */
  result: string | null;
  truncated: boolean;
  ms: number | null;
}

/** A round that ended in tool calls: the words before them and the calls. */
export interface ToolStep {
  text: string;
  calls: ToolCallView[];
}

export interface LoopHandlers extends StreamHandlers {
  /** A step's answer called tools: its text so far becomes a finished step holding these calls. */
  onToolStep?(step: ToolStep): void;
  /** A call changed (asked, running, its result). */
  onCall?(call: ToolCallView): void;
  /** Asked for each call the user has not allowed for good; rejects (AbortError) when the loop is stopped. */
  decide(call: ToolCallView, signal: AbortSignal): Promise<Decision>;
}

export interface LoopOptions {
  client: LoopClient;
  /** the conversation so far (ending with the user's message) */
  messages: ChatMessage[];
  sessionId: string | null;
  tools: ChatTool[];
  /** names (`server__tool`) the user allowed for good */
  alwaysAllowed: ReadonlySet<string>;
  params?: Omit<ChatParams, "tools" | "tool_choice">;
  maxSteps?: number;
  signal: AbortSignal;
  handlers: LoopHandlers;
}

export interface LoopResult extends ChatResult {
  /** every step that called tools, in order */
  steps: ToolStep[];
  /** the session the core put the turns in */
  sessionId: string | null;
  /** the conversation as sent last, with the final answer (tool calls and results included) */
  messages: ChatMessage[];
  /** the step limit was reached: the last answer was asked for without tools */
  stepLimitReached: boolean;
}

export function newCallView(call: ChatToolCall): ToolCallView {
  const { server, tool } = splitToolName(call.function.name);
  return {
    id: call.id,
    name: call.function.name,
    server,
    tool,
    arguments: call.function.arguments,
    status: "waiting",
    approval: null,
    result: null,
    truncated: false,
    ms: null,
  };
}

function abortError(): DOMException {
  return new DOMException("The answer was stopped.", "AbortError");
}

/** Runs the loop until the model answers without calling a tool (or the step limit, or Stop: AbortError). */
export async function runAgentLoop(o: LoopOptions): Promise<LoopResult> {
  const maxSteps = Math.max(0, o.maxSteps ?? DEFAULT_MAX_TOOL_STEPS);
  const always = new Set(o.alwaysAllowed);
  const messages = [...o.messages];
  const steps: ToolStep[] = [];
  let sessionId = o.sessionId;
  for (let step = 0; ; step++) {
    const last = step >= maxSteps;
    const params: ChatParams = { ...o.params, tools: o.tools, ...(last && o.tools.length > 0 ? { tool_choice: "none" as const } : {}) };
    const onStart = (info: TurnInfo) => {
      if (info.sessionId) sessionId = info.sessionId;
      o.handlers.onStart?.(info);
    };
    const r = await streamChat(o.client, messages, sessionId, { ...o.handlers, onStart }, o.signal, params);
    if (r.toolCalls.length === 0 || last) {
      messages.push({ role: "assistant", content: r.text });
      return { ...r, steps, sessionId, messages, stepLimitReached: last && o.tools.length > 0 };
    }
    const calls = r.toolCalls.map(newCallView);
    const done: ToolStep = { text: r.text, calls };
    steps.push(done);
    o.handlers.onToolStep?.({ text: done.text, calls: calls.map((c) => ({ ...c })) });
    messages.push({ role: "assistant", content: r.text || null, tool_calls: r.toolCalls });
    for (const call of calls) {
      const content = await runOne(o, call, always, { sessionId, turnId: r.info.turnId });
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
}

/** Asks about one call (unless allowed for good), runs or declines it, and returns the text the model gets. */
async function runOne(o: LoopOptions, call: ToolCallView, always: Set<string>, ids: { sessionId: string | null; turnId: string | null }): Promise<string> {
  const show = (patch: Partial<ToolCallView>) => {
    Object.assign(call, patch);
    o.handlers.onCall?.({ ...call });
  };
  let approval: "once" | "always" | undefined;
  if (always.has(call.name)) show({ approval: "standing" });
  else {
    show({ status: "waiting" });
    const d = await decideOrStop(o, call);
    if (d === "deny") {
      show({ status: "declined", result: DECLINED });
      return DECLINED;
    }
    approval = d;
    if (d === "always") always.add(call.name);
    show({ approval: d });
  }
  show({ status: "running" });
  const started = Date.now();
  try {
    const reply = await callTool(
      o.client,
      {
        name: call.name,
        arguments: call.arguments,
        ...(approval ? { approval } : {}),
        callId: call.id,
        ...(ids.sessionId ? { sessionId: ids.sessionId } : {}),
        ...(ids.turnId ? { turnId: ids.turnId } : {}),
      },
      o.signal,
    );
    show({ status: reply.isError ? "failed" : "done", result: reply.content, truncated: reply.truncated, ms: reply.ms });
    return reply.content;
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") {
      show({ status: "stopped", ms: Date.now() - started });
      throw e;
    }
    // The permission was revoked meanwhile: ask, once, as for any call.
    if (e instanceof ApiError && e.code === "approval_required" && approval === undefined) {
      always.delete(call.name);
      return runOne(o, call, always, ids);
    }
    // The core could not run it (unknown tool, a server that is down): the model is told, as with a tool's own error.
    const text = `The call could not be run: ${messageOf(e)}`;
    show({ status: "failed", result: text, ms: Date.now() - started });
    return text;
  }
}

function decideOrStop(o: LoopOptions, call: ToolCallView): Promise<Decision> {
  if (o.signal.aborted) return Promise.reject(abortError());
  return new Promise<Decision>((resolve, reject) => {
    const onAbort = () => {
      Object.assign(call, { status: "stopped" });
      o.handlers.onCall?.({ ...call });
      reject(abortError());
    };
    o.signal.addEventListener("abort", onAbort, { once: true });
    o.handlers.decide({ ...call }, o.signal).then(
      (d) => {
        o.signal.removeEventListener("abort", onAbort);
        resolve(d);
      },
      (e: unknown) => {
        o.signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * The wire messages for an answer shown earlier in the chat: each step's words and calls, each
 * call's result (a declined or unfinished one says so), then the final words.
 */
export function answerToWire(steps: ToolStep[], finalText: string): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const s of steps) {
    out.push({
      role: "assistant",
      content: s.text || null,
      tool_calls: s.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
    });
    for (const c of s.calls) out.push({ role: "tool", tool_call_id: c.id, content: c.result ?? "The call was stopped before it finished." });
  }
  out.push({ role: "assistant", content: finalText });
  return out;
}
