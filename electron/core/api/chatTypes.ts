/**
 * OpenAI chat message shapes, shared by the /v1 routes (which validate requests), the rollout
 * (which records prompts and pairs next states) and the store. Kept structural and permissive:
 * validation lives in the route's zod schema, not here.
 */
export type ChatRole = "system" | "developer" | "user" | "assistant" | "tool";

export interface ChatTextPart {
  type: "text";
  text: string;
}
/** Text parts are what we read; other part types (images...) are kept as given. */
export type ChatContentPart = ChatTextPart | { type: string; [key: string]: unknown };

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: ChatRole;
  content?: string | ChatContentPart[] | null;
  name?: string;
  /** assistant messages that call tools */
  tool_calls?: ChatToolCall[];
  /** tool messages: which call they answer */
  tool_call_id?: string;
}

/** The text of a message: a string content, or its text parts joined (no separator, as OpenAI does). */
export function messageText(m: Pick<ChatMessage, "content">): string {
  const c = m.content;
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  let out = "";
  for (const p of c) if (p && p.type === "text" && typeof (p as ChatTextPart).text === "string") out += (p as ChatTextPart).text;
  return out;
}
