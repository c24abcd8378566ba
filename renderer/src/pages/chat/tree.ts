/**
 * A chat as a tree (GET /api/sessions/:id: every turn names its parent): the branch shown (the
 * active path), and for each message its versions. Turns with the same parent are siblings: those
 * that asked the same question are answers to it (Regenerate), those that asked another are
 * versions of the question (an edited message). A turn after tool results, or after an answer cut
 * by the token limit (Continue), continues the answer before it and has no versions of its own.
 */
import type { SessionReply, TurnView } from "../../../../electron/core/api/sessions.js";
import { userTextOf } from "../../format/turns.js";
import { continuesCutAnswer, toolStepsOf } from "../../chat/history.js";

/** A message's versions: which one is shown (0-based) and the turn to make active for each. */
export interface Branch {
  index: number;
  /** for each version, the turn PUT /api/sessions/:id/active is given to show it */
  turnIds: string[];
}

export type Tree = Pick<SessionReply, "turns"> & Partial<Pick<SessionReply, "activePath">>;

const mainTurns = (tree: Tree) => tree.turns.filter((t) => t.type !== "side");

/** A turn that continues an answer: after tool results (its prompt ends with a `tool` message), or one cut by the token limit (Continue). */
export const continuesAnswer = (t: TurnView) => toolStepsOf(t.messages) !== null || continuesCutAnswer(t.messages);

/**
 * The turns of the branch shown, first question first. A core without the tree (no activePath)
 * shows every main turn in recorded order, as before.
 */
export function pathTurns(tree: Tree): TurnView[] {
  const main = mainTurns(tree);
  if (!tree.activePath) return main;
  const byId = new Map(main.map((t) => [t.turnId, t]));
  return tree.activePath.flatMap((id) => byId.get(id) ?? []);
}

/** The turns that answer the user after `parent` (null: a first question), in recorded order. */
function childrenOf(tree: Tree, parent: string | null): TurnView[] {
  return mainTurns(tree).filter((t) => (t.parentTurnId ?? null) === parent && !continuesAnswer(t));
}

/** The other answers to `turn`'s question (itself included), in recorded order. */
export function answerSiblings(tree: Tree, turn: TurnView): TurnView[] {
  const q = userTextOf(turn);
  return childrenOf(tree, turn.parentTurnId ?? null).filter((t) => userTextOf(t) === q);
}

/** The answers' versions: one per sibling answer; null when there is only one. */
export function answerBranch(tree: Tree, turn: TurnView): Branch | null {
  const sibs = answerSiblings(tree, turn);
  if (sibs.length < 2) return null;
  return { index: sibs.findIndex((t) => t.turnId === turn.turnId), turnIds: sibs.map((t) => t.turnId) };
}

/**
 * The question's versions: one per distinct question asked after the same parent, in the order
 * first asked; each is shown through its latest answer. Null when it was asked one way only.
 */
export function questionBranch(tree: Tree, turn: TurnView): Branch | null {
  const latest = new Map<string, string>(); // question → its latest turn, in the order first asked
  for (const t of childrenOf(tree, turn.parentTurnId ?? null)) latest.set(userTextOf(t), t.turnId);
  if (latest.size < 2) return null;
  const asked = userTextOf(turn);
  const questions = [...latest.keys()];
  return { index: questions.indexOf(asked), turnIds: questions.map((q) => (q === asked ? turn.turnId : (latest.get(q) ?? turn.turnId))) };
}

/** Every turn that asked `turn`'s question after the same parent (its answers): deleting the question deletes them all. */
export function questionTurnIds(tree: Tree, turn: TurnView): string[] {
  return answerSiblings(tree, turn).map((t) => t.turnId);
}
