import {
  LlamaText,
  type ChatHistoryItem,
  type ChatModelFunctionCall,
  type ChatModelFunctions,
  type ChatModelResponse,
  type ChatWrapper,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { messageText, type ChatMessage } from "../api/chatTypes.js";

/** An OpenAI function tool, as the request gives it. */
export interface FunctionTool {
  name: string;
  description?: string;
  /** JSON schema of the arguments object. */
  parameters?: Record<string, unknown>;
}

export interface RenderedPrompt {
  tokens: Token[];
  /** Strings that end the answer besides end-of-generation tokens (from the chat template). */
  stopTriggers: string[];
}

function parseArguments(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args; // kept verbatim: the template renders what the model produced
  }
}

/**
 * OpenAI messages → node-llama-cpp chat history. Tool results are attached to the assistant
 * message's function calls (node-llama-cpp keeps a call and its result together); developer
 * messages are system messages. The history ends with an empty model response, so the rendered
 * text ends where the assistant's answer begins; when the messages end with an assistant message
 * of text only (an answer cut by the token limit, sent back to be continued), that answer is left
 * open instead, so the model goes on where it stopped (llama-server's assistant prefill).
 */
export function toChatHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const results = new Map<string, string>();
  for (const m of messages) if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, messageText(m));
  const attached = new Set<string>();

  const history: ChatHistoryItem[] = [];
  let model: ChatModelResponse | null = null;
  for (const m of messages) {
    const text = messageText(m);
    if (m.role === "system" || m.role === "developer") {
      model = null;
      history.push({ type: "system", text });
    } else if (m.role === "user") {
      model = null;
      history.push({ type: "user", text });
    } else if (m.role === "assistant") {
      // Consecutive assistant messages (a call, its results, then the answer) are one model turn.
      if (!model) {
        model = { type: "model", response: [] };
        history.push(model);
      }
      if (text) model.response.push(text);
      for (const call of m.tool_calls ?? []) {
        const fc: ChatModelFunctionCall = {
          type: "functionCall",
          name: call.function.name,
          params: parseArguments(call.function.arguments),
          result: results.get(call.id) ?? "",
        };
        if (results.has(call.id)) attached.add(call.id);
        model.response.push(fc);
      }
    } else if (m.role === "tool") {
      // A result whose call we hold is already rendered with that call; an orphan result is
      // shown to the model as user text rather than dropped.
      if (m.tool_call_id && attached.has(m.tool_call_id)) continue;
      model = null;
      history.push({ type: "user", text: `Tool result${m.tool_call_id ? ` (${m.tool_call_id})` : ""}:\n${text}` });
    }
  }
  const last = messages[messages.length - 1];
  const continues = last?.role === "assistant" && !last.tool_calls?.length && messageText(last) !== "";
  if (!continues) history.push({ type: "model", response: [] });
  return history;
}

export function toChatFunctions(tools: readonly FunctionTool[] | undefined): ChatModelFunctions | undefined {
  if (!tools || tools.length === 0) return undefined;
  const fns: Record<string, { description?: string; params?: never }> = {};
  // node-llama-cpp types params as its GBNF schema subset; OpenAI sends plain JSON schema,
  // which the wrapper only documents in the prompt, so the cast is safe.
  for (const t of tools) fns[t.name] = { description: t.description, params: t.parameters as never };
  return fns;
}

/** Plain text of a LlamaText (special-token texts kept literally; named special tokens dropped). */
export function llamaTextString(t: string | LlamaText): string {
  if (typeof t === "string") return t;
  const json = t.toJSON();
  if (typeof json === "string") return json;
  return json.map((v) => (typeof v === "string" ? v : v.type === "specialTokensText" ? v.value : "")).join("");
}

export function renderPrompt(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[], tools?: readonly FunctionTool[]): RenderedPrompt {
  const state = wrapper.generateContextState({
    chatHistory: toChatHistory(messages),
    availableFunctions: toChatFunctions(tools),
    documentFunctionParams: true,
  });
  const tokens = LlamaText(state.contextText).tokenize(model.tokenizer);
  const stopTriggers = state.stopGenerationTriggers.map((t) => llamaTextString(t)).filter((s) => s.length > 0);
  return { tokens, stopTriggers };
}
