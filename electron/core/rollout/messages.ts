import type { ChatMessage } from "../api/chatTypes.js";

export { INTERNAL_BEGIN, INTERNAL_END, stripInternalContext, withoutInternalContext, canonicalMessage, chainHash, prefixChain } from "../store/messageKeys.js";

/** The assistant message a client will replay for our answer. */
export function answerMessage(text: string, toolCalls?: Array<{ id: string; name: string; arguments: string }>): ChatMessage {
  return {
    role: "assistant",
    content: text,
    ...(toolCalls && toolCalls.length
      ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: c.arguments } })) }
      : {}),
  };
}
