import type { ChatMessage } from "../../api/chat.js";
import type { AnswerEditView, AttachmentView } from "../../../../electron/core/api/sessions.js";
import { hintOf, preferenceCount, speedOfTimings, thumbsOf, userTextOf, type AnswerSpeed, type Thumbs } from "../../format/turns.js";
import { answerToWire, type ToolCallView, type ToolStep } from "../../chat/agentLoop.js";
import { continuesCutAnswer, toolStepsOf } from "../../chat/history.js";
import { answerBranch, pathTurns, questionBranch, questionTurnIds, type Branch, type Tree } from "./tree.js";

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
  /**
   * The turn that answered the user (a question: the turn that asked it; an answer that used
   * tools: its first turn, while `turnId` is its last). Versions switch and deletes go by it.
   */
  rootTurnId?: string | null;
  /** the other versions of this message (edited questions, regenerated answers); absent: none */
  branch?: Branch | null;
  /** the turns deleting this message deletes (with what follows them) */
  deleteIds?: string[];
  /** the user's rewrite of this answer */
  answerEdit?: AnswerEditView;
  /** files attached to this question */
  attachments?: AttachmentView[];
  /** the answer was cut by the token limit (finish reason length): it can be continued */
  cut?: boolean;
}

/**
 * The recorded chat, shown again after an answer (or a switch), keeps what only the live answer
 * knew about a turn on screen: its tool cards as they ended (approvals, "Always allowed", a call
 * stopped while it waited: a turn records the calls it made, not what the user decided), that it
 * was stopped, the step limit and an error. Matched by the answer's turn.
 */
export function keepLive(recorded: DisplayMessage[], live: DisplayMessage[]): DisplayMessage[] {
  const byTurn = new Map(live.filter((m) => m.role === "assistant" && m.turnId).map((m) => [m.turnId, m]));
  return recorded.map((m) => {
    const was = m.role === "assistant" && m.turnId ? byTurn.get(m.turnId) : undefined;
    if (!was) return m;
    return {
      ...m,
      steps: was.steps?.length ? was.steps : m.steps,
      stopped: m.stopped || was.stopped,
      ...(was.stepLimit ? { stepLimit: true } : {}),
      ...(was.error ? { error: was.error } : {}),
    };
  });
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
 * The branch of a recorded chat shown (its active path) as messages: each turn's question and
 * answer, each with its versions; a turn after tool results continues the answer before it (the
 * agent loop's next request).
 */
export function displayTree(tree: Tree): DisplayMessage[] {
  const shown: DisplayMessage[] = [];
  for (const t of pathTurns(tree)) {
    const steps = toolStepsOf(t.messages);
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
      stopped: t.stopped ?? false,
      answerEdit: t.answerEdit,
      // cut by the token limit: Continue is offered on it, in a reopened chat too
      cut: t.finishReason === "length" && !t.stopped,
    };
    if (steps && prev?.role === "assistant") {
      shown[shown.length - 1] = { ...prev, ...answer, steps };
      continue;
    }
    // Continue: the cut answer's text, then what this turn added.
    if (continuesCutAnswer(t.messages) && prev?.role === "assistant") {
      shown[shown.length - 1] = { ...prev, ...answer, content: prev.content + t.text, answerEdit: t.answerEdit ?? prev.answerEdit };
      continue;
    }
    const userText = userTextOf(t);
    if (userText)
      shown.push({
        key: `u-${t.turnId}`,
        role: "user",
        content: userText,
        rootTurnId: t.turnId,
        branch: questionBranch(tree, t),
        deleteIds: questionTurnIds(tree, t),
        attachments: t.attachments,
      });
    shown.push({ key: `a-${t.turnId}`, role: "assistant", ...answer, rootTurnId: t.turnId, branch: answerBranch(tree, t), deleteIds: [t.turnId] });
  }
  return shown;
}
