import type { ChatMessage } from "../api/chatTypes.js";
import type { Preference } from "../api/preferenceSchema.js";
import type { PlannedBlock } from "../rollout/rollout.js";

/**
 * The preference block: the active preferences as a few lines of the system prompt. The header
 * tells the model these are standing instructions from the user, not part of this request.
 */
export const BLOCK_HEADER = "The user's standing preferences (follow them in every answer):";

export function blockLine(p: Pick<Preference, "text">): string {
  return `- ${p.text.replace(/\s+/g, " ").trim()}`;
}

export function renderBlock(prefs: ReadonlyArray<Pick<Preference, "text">>): string {
  return [BLOCK_HEADER, ...prefs.map(blockLine)].join("\n");
}

/**
 * Picks the active preferences that fit `budget` tokens, newest first (a correction just made
 * matters most), and lists them oldest first in the block so the prompt stays stable as new ones
 * arrive (the KV cache reuses an unchanged prefix).
 */
export function planBlock(active: readonly Preference[], budget: number, countTokens: (text: string) => number): PlannedBlock {
  // Ties (made within one millisecond) go by list order: later in the list is newer.
  const newestFirst = active
    .map((p, i) => ({ p, i }))
    .sort((a, b) => (a.p.createdAt < b.p.createdAt ? 1 : a.p.createdAt > b.p.createdAt ? -1 : b.i - a.i))
    .map((x) => x.p);
  const chosen: Preference[] = [];
  const overBudget: string[] = [];
  let used = countTokens(BLOCK_HEADER) + 1;
  for (const p of newestFirst) {
    const cost = countTokens(blockLine(p)) + 1;
    if (used + cost > budget) overBudget.push(p.id);
    else {
      chosen.push(p);
      used += cost;
    }
  }
  if (chosen.length === 0) return { text: "", ids: [], tokens: 0, overBudget };
  chosen.reverse();
  const text = renderBlock(chosen);
  return { text, ids: chosen.map((p) => p.id), tokens: countTokens(text), overBudget };
}

/**
 * The messages with the block in the system prompt: appended to the first system (or developer)
 * message when the conversation starts with one, else a system message of its own in front.
 * The client's messages are not changed (the turn records them as sent).
 */
export function withBlock(messages: readonly ChatMessage[], block: string): ChatMessage[] {
  if (!block) return [...messages];
  const first = messages[0];
  if (first && (first.role === "system" || first.role === "developer")) {
    let content: ChatMessage["content"];
    if (Array.isArray(first.content)) content = [...first.content, { type: "text", text: `\n\n${block}` }];
    else content = first.content ? `${first.content}\n\n${block}` : block;
    return [{ ...first, content }, ...messages.slice(1)];
  }
  return [{ role: "system", content: block }, ...messages];
}

/** A plain-text prompt (POST /v1/completions, no system prompt): the block is a paragraph before it. */
export function plainPrefix(block: string): string {
  return block ? `${block}\n\n` : "";
}
