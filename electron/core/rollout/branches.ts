import type { ChatMessage } from "../api/chatTypes.js";
import type { EventBus } from "./events.js";
import type { Store, TurnEntry } from "../store/store.js";

/**
 * What a branch of the conversation tree teaches (docs/method.md "Edits and branches"). Siblings
 * are turns with the same parent: a regenerated answer (the same last user message) or an edited
 * question (another one).
 * - An edited question: the first answer of the question it replaced gets the edited question as
 *   its next state (a rephrase is a correction; the judge reads it), when it had none.
 * - A regenerate: the answer it replaced is a weak negative unless the user went back to it (the
 *   session's active path runs through it); samples.ts gives it the reward.
 * Both only between turns of our chat window (`fromUi`): there a sibling is the user's deliberate
 * edit or regenerate. An outside client sends whole histories, and a repeated or restarted one
 * (a retry, a compacted context) is no statement about the answer before it.
 */

/** The weak reward of an answer a regenerate replaced (half a thumbs down). */
export const REGENERATE_REWARD = -0.5;

/** The last user message of a request, as a comparable key (its content as JSON), or null. */
export function lastUserKey(messages: readonly ChatMessage[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "user") return JSON.stringify(messages[i].content ?? null);
  return null;
}

/** The main turns of our chat window with the same parent as `e` (itself included), in recorded order; [] for another turn. */
export function mainSiblings(store: Store, e: TurnEntry): TurnEntry[] {
  if (e.type !== "main" || !e.fromUi) return [];
  const all = e.parentTurnId === null ? store.sessionTurns(e.sessionId).filter((x) => x.parentTurnId === null) : store.childrenOf(e.parentTurnId);
  return all.filter((x) => x.type === "main" && x.fromUi);
}

/**
 * Whether a regenerate replaced this answer and the user did not go back to it: a later sibling
 * answers the same last user message, and the session's active path does not run through it.
 */
export function isReplacedAnswer(store: Store, e: TurnEntry): boolean {
  const siblings = mainSiblings(store, e);
  const later = siblings.slice(siblings.findIndex((x) => x.turnId === e.turnId) + 1);
  if (siblings.length === 0 || later.length === 0) return false;
  const key = lastUserKey(store.readTurn(e.turnId).messages);
  if (!later.some((x) => lastUserKey(store.readTurn(x.turnId).messages) === key)) return false;
  return !store.activePath(e.sessionId).includes(e.turnId);
}

/**
 * The next states an edited question gives: for each earlier version of the question (a sibling
 * with another last user message), its first answer, when it has no next state yet, gets the new
 * version (the new turn's last user message).
 */
export function editedQuestionNextStates(store: Store, turnId: string): Array<{ turnId: string; messages: ChatMessage[] }> {
  const e = store.turnEntry(turnId);
  if (!e || mainSiblings(store, e).length < 2) return [];
  const messages = store.readTurn(turnId).messages;
  const key = lastUserKey(messages);
  const question = messages.findLast((m) => m.role === "user");
  if (key === null || !question) return [];
  const seen = new Set<string | null>([key]);
  const out: Array<{ turnId: string; messages: ChatMessage[] }> = [];
  for (const s of mainSiblings(store, e)) {
    if (s.turnId === turnId) break;
    const k = lastUserKey(store.readTurn(s.turnId).messages);
    // Only a version's first answer: its regenerates are siblings with the same question.
    if (seen.has(k)) continue;
    seen.add(k);
    if (s.nextState === null && !s.stopped) out.push({ turnId: s.turnId, messages: [question] });
  }
  return out;
}

/**
 * Gives the earlier versions of an edited question their next state as each new main turn lands,
 * and asks the judge to read it (turnReady). Returns an unsubscribe.
 */
export function watchEditedQuestions(store: Store, bus: EventBus): () => void {
  return bus.on("turn", ({ turn }) => {
    if (turn.type !== "main" || store.readOnly) return;
    for (const ns of editedQuestionNextStates(store, turn.turnId)) {
      store.appendNextState({ turnId: ns.turnId, sessionId: turn.sessionId, fromTurnId: turn.turnId, messages: ns.messages });
      bus.emit("turnReady", { turnId: ns.turnId, sessionId: turn.sessionId });
    }
  });
}
