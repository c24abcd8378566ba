import type { ChatMessage } from "../../api/chat.js";
import type { TurnView } from "../../../../electron/core/api/sessions.js";
import { hintOf, preferenceCount, speedOfTimings, thumbsOf, userTextOf, type AnswerSpeed, type Thumbs } from "../../format/turns.js";
import { answerToWire, type ToolCallView, type ToolStep } from "../../chat/agentLoop.js";
import { toolStepsOf, type turnMessages } from "../../chat/history.js";

/** A message as the chat shows it: the user's words, or an answer with its feedback, source and tool steps. */
export interface DisplayMessage {
  key: string;
  role: "user" | "assistant";
  content: string;
  turnId?: string | null;
  adapter?: string | null;
  /** the served model that wrote it */
  model?: string | null;
  thumbs?: Thumbs;
  hint?: string | null;
  /** standing preferences its prompt carried */
  preferences?: number;
  /** how fast it was written */
  speed?: AnswerSpeed | null;
  streaming?: boolean;
  stopped?: boolean;
  error?: string;
  /** rounds of this answer that called tools, before its final words (`content`) */
  steps?: ToolStep[];
  /** the step limit ended the tool calls */
  stepLimit?: boolean;
}

/** A message as sent to /v1: an answer that used tools goes with its calls and their results. */
export function toWire(m: DisplayMessage): ChatMessage[] {
  if (m.role === "assistant" && m.steps?.length) return answerToWire(m.steps, m.content);
  return [{ role: m.role, content: m.content }];
}

/** The call `call` replaces in whichever step holds it. */
export function withCall(steps: ToolStep[] | undefined, call: ToolCallView): ToolStep[] | undefined {
  return steps?.map((s) => (s.calls.some((c) => c.id === call.id) ? { ...s, calls: s.calls.map((c) => (c.id === call.id ? call : c)) } : s));
}

let keySeq = 0;
/** A fresh React key for a message. */
export const nextKey = () => `m${++keySeq}`;

/** The system prompt a recorded turn was asked with ("" when none). */
export function systemPromptOf(messages: { role: string; content: string }[]): string {
  return messages.find((m) => m.role === "system")?.content ?? "";
}

/**
 * A recorded chat's main turns as messages: each turn's question and answer; a turn after tool
 * results continues the answer before it (the agent loop's next request). `prompts`: each turn's
 * recorded prompt messages, by turn id.
 */
export function displayHistory(turns: TurnView[], prompts: ReturnType<typeof turnMessages>): DisplayMessage[] {
  const shown: DisplayMessage[] = [];
  for (const t of turns) {
    const steps = toolStepsOf(prompts.get(t.turnId));
    const prev = shown[shown.length - 1];
    const answer = {
      content: t.text,
      turnId: t.turnId,
      adapter: t.adapter,
      model: t.model,
      thumbs: thumbsOf(t),
      hint: hintOf(t),
      preferences: preferenceCount(t),
      speed: speedOfTimings(t.timings),
    };
    if (steps && prev?.role === "assistant") {
      shown[shown.length - 1] = { ...prev, ...answer, steps };
      continue;
    }
    const userText = userTextOf(t);
    if (userText) shown.push({ key: nextKey(), role: "user", content: userText });
    shown.push({ key: nextKey(), role: "assistant", ...answer });
  }
  return shown;
}
