import type { ChatMessage, Sample } from "./sample.js";

/**
 * An assistant answer the user rewrote ("this is what you should have said") as training signal
 * (docs/method.md "Answer edits"). Pure: the core's sample pool and its export build the same
 * sample from the recorded turn and the edit.
 */

/** What the OPD teacher reads (appended to the last user message, as any hint): the edit itself, to be answered verbatim. */
export function answerEditHint(edit: string): string {
  return `The user rewrote the answer. Answer with exactly this text:\n${edit}`;
}

/** The next state the original answer gets from an edit: the correction in the user's voice (the judge reads it). */
export function answerEditNextState(edit: string): ChatMessage[] {
  return [{ role: "user", content: `No. This is what you should have said:\n\n${edit}` }];
}

/** The recorded turn's fields the edit's sample is built from (store/records.ts TurnRecord). */
export interface EditedTurn {
  promptTokens: number[];
  clientPromptTokens?: number[];
  preferences?: unknown;
  /** the request's messages (the core's own message type: checked as a sample's by the trainer's protocol) */
  messages: ReadonlyArray<{ role: string }>;
  format?: "completion";
}

/**
 * The edit's sample: the student is the policy on the turn's prompt (the client's prompt alone when
 * the turn was served with a preference block), the response the edit's text (tokenized by the
 * trainer, end-of-turn token included: never served, so no log-probs: lp_old is on-policy), the
 * reward +1 (the RL term: A_t = +1 on every token of the edit, at ρ = 1 the gradient of the edit's
 * log-likelihood), and the edit as the OPD teacher's hint: the teacher sees the edit and scores its
 * tokens, A_t = lp_T(edit_t | s + edit) − lp_old(edit_t | s). null: nothing to train (no prompt).
 */
export function answerEditSample(t: EditedTurn, edit: string): Sample | null {
  const student = t.preferences !== undefined && (t.clientPromptTokens?.length ?? 0) > 0 ? t.clientPromptTokens! : t.promptTokens;
  if (student.length === 0 || edit.trim() === "") return null;
  const hinted = t.messages.some((m) => m.role === "user");
  return {
    prompt_tokens: student,
    response: edit,
    reward: 1,
    ...(hinted ? { hint: answerEditHint(edit), messages: t.messages as ChatMessage[] } : {}),
    ...(t.format ? { format: t.format } : {}),
  };
}
