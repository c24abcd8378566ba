import crypto from "node:crypto";
import { messageText, type ChatContentPart, type ChatMessage } from "../api/chatTypes.js";

/*
 * How a request's messages are matched to earlier turns (the prefix keys of the turn records).
 * The store owns them: it derives the parent of turns recorded before the conversation tree from
 * their recorded messages with the same keys the rollout records (rollout/messages.ts re-exports them).
 */

/**
 * OpenClaw appends a user message holding its internal context, delimited by these markers.
 * It is context for the model, not something the user said: it is left out of next states
 * and of the keys that match a request to an earlier turn (it differs every turn).
 */
export const INTERNAL_BEGIN = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>";
export const INTERNAL_END = "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>";

/** Removes internal-context blocks (an unclosed block runs to the end of the text). */
export function stripInternalContext(text: string): string {
  let out = "";
  let pos = 0;
  for (;;) {
    const b = text.indexOf(INTERNAL_BEGIN, pos);
    if (b === -1) return out + text.slice(pos);
    out += text.slice(pos, b);
    const e = text.indexOf(INTERNAL_END, b + INTERNAL_BEGIN.length);
    if (e === -1) return out;
    pos = e + INTERNAL_END.length;
  }
}

/**
 * The messages without OpenClaw's internal context: user messages lose the blocks, and a
 * user message left with nothing is dropped. Other roles are kept as they are (a system
 * prompt may well mention the marker in its instructions).
 */
export function withoutInternalContext(messages: readonly ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    if (m.role !== "user" || !messageText(m).includes(INTERNAL_BEGIN)) {
      out.push(m);
      continue;
    }
    if (typeof m.content === "string") {
      const t = stripInternalContext(m.content);
      if (t.trim() !== "") out.push({ ...m, content: t.trim() });
      continue;
    }
    const parts: ChatContentPart[] = [];
    for (const p of m.content ?? []) {
      if (p.type !== "text" || typeof p.text !== "string") parts.push(p);
      else {
        const t = stripInternalContext(p.text).trim();
        if (t !== "") parts.push({ type: "text", text: t });
      }
    }
    if (parts.length > 0) out.push({ ...m, content: parts });
  }
  return out;
}

/** Tool-call arguments compared as JSON values when they parse, so re-serialising clients still match. */
function canonicalArgs(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args));
  } catch {
    return args;
  }
}

/**
 * What must be equal for two messages to be "the same message" when a client replays the
 * history: role, text (trimmed), non-text parts, tool calls by name and arguments. Ids are
 * left out: clients may rewrite tool-call ids, and an answer's text is what the user saw.
 */
export function canonicalMessage(m: ChatMessage): string {
  const other = Array.isArray(m.content) ? m.content.filter((p) => p.type !== "text") : [];
  return JSON.stringify([
    m.role,
    messageText(m).trim(),
    other.length ? other : 0,
    (m.tool_calls ?? []).map((c) => [c.function?.name ?? "", canonicalArgs(c.function?.arguments ?? "")]),
  ]);
}

/** Chained hash: chain(h, m) identifies the whole sequence that h identified followed by m. */
export function chainHash(prev: string, canonical: string): string {
  return crypto.createHash("sha256").update(prev).update("\u0000").update(canonical).digest("base64url").slice(0, 32);
}

/** chain[i] identifies messages[0..i] (inclusive). */
export function prefixChain(messages: readonly ChatMessage[]): string[] {
  const out: string[] = [];
  let h = "";
  for (const m of messages) out.push((h = chainHash(h, canonicalMessage(m))));
  return out;
}
