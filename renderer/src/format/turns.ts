// What the chat and the Training page derive from a recorded turn (GET /api/sessions/:id's turns,
// GET /api/training's recentJudged: the contract's TurnView) and from a stream's timings.
import type { AnswerTimingsView, FeedbackView, TurnView } from "../../../electron/core/api/sessions.js";
import type { LlamaTimings } from "../../../electron/core/api/openai.js";
import { messageText } from "../../../electron/core/api/chatTypes.js";

/** A thumb given to an answer, or none. */
export type Thumbs = FeedbackView["thumbs"];

/** How fast an answer was written: from a recorded turn's timings, or a stream's last chunk. */
export interface AnswerSpeed {
  /** answer tokens */
  tokens: number;
  /** after the first token; null for a one-token answer */
  tokensPerSecond: number | null;
  /** the prompt's evaluation up to the first token */
  firstTokenSeconds: number;
}

export function speedOfTimings(t: AnswerTimingsView | undefined): AnswerSpeed | null {
  if (!t) return null;
  return {
    tokens: t.decodeTokens + 1,
    tokensPerSecond: t.decodeTokens > 0 && t.decodeMs > 0 ? (1000 * t.decodeTokens) / t.decodeMs : null,
    firstTokenSeconds: t.firstTokenMs / 1000,
  };
}

/** The same from the wire's llama-server-style timings (api/openai.ts LlamaTimings). */
export function speedOfLlamaTimings(t: LlamaTimings): AnswerSpeed {
  return { tokens: t.predicted_n + 1, tokensPerSecond: t.predicted_per_second, firstTokenSeconds: t.prompt_ms / 1000 };
}

/** A turn's prompt messages as text (to rebuild the conversation). */
export function promptTexts(t: TurnView): { role: string; content: string }[] {
  return t.messages.map((m) => ({ role: m.role, content: messageText(m) }));
}

/** The user's message the turn answered ("" when none). */
export function userTextOf(t: TurnView): string {
  // OpenClaw appends its internal context as a last user message: that is not what the user said.
  const lastUser = [...promptTexts(t)].reverse().find((m) => m.role === "user" && !m.content.trimStart().startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"));
  return lastUser?.content ?? "";
}

/** The user's thumb on it, or none. */
export const thumbsOf = (t: TurnView): Thumbs => t.feedback?.thumbs ?? null;

/** The user's hint on it, or none. */
export const hintOf = (t: TurnView): string | null => t.feedback?.hint ?? null;

/** The judges' hint candidates (none when not judged). */
export const judgeHintsOf = (t: TurnView): string[] => t.judge?.hints ?? [];

/** How many standing preferences its prompt carried. */
export const preferenceCount = (t: TurnView): number => t.preferences?.ids.length ?? 0;
