import type { Store, TurnEntry } from "../store/store.js";
import { isHeldBack } from "./heldBack.js";

/**
 * The at-least-one guarantee (OpenClaw-RL's "promote a turn so every session contributes"): a
 * finished session whose main turns all scored 0 still yields one training sample, so a quiet
 * user (who never rates, and whose next messages the judge reads as neither progress nor a
 * correction) still teaches the model.
 *
 * Which session: closed (done, or idle), with at least one judged main turn, and no main turn
 * that makes a sample of its own (no ±1 from thumbs or the judge, no hint). A session where any
 * turn did is left as it is: it already teaches.
 *
 * Which turn: its best-judged main turn: the highest mean of the judge's valid votes (−1, 0, 1;
 * invalid votes dropped; at least one valid), the latest on a tie (the newest behaviour). Held-back
 * turns are never trained on, so never chosen.
 *
 * What it carries: a weak positive reward r = (1 + v̄) / 4, where v̄ is that mean vote, and no
 * hint. With 3 votes whose majority is 0, v̄ is 0 or ±1/3: r = 0.25 for a turn every vote called
 * neutral (or split +1/−1), 0.33 for one vote of progress. It is always in [0.25, 0.5): at most
 * half a thumbs up, so one promoted turn per session never weighs like explicit feedback, and it
 * grows with the judge's lean. In the binary and combined losses (and top-k's RL term) the
 * advantage is A_t = r on every response token, as for any reward (method.md); OPD trains nothing
 * on it (no hint). When the best mean vote is below 0 (every turn leaned negative) there is
 * nothing good to reinforce and no sample is made. Why not the reference's own choice: it keeps
 * the promoted turn's reward of 0, whose advantage is 0 (with β = 0 the sample trains nothing);
 * here a sample with reward 0 and no hint is masked out of the loss.
 */
export const AT_LEAST_ONE = {
  /** r = (1 + v̄) · scale, v̄ ∈ [0, 1) */
  scale: 0.25,
} as const;

export interface Promotion {
  turnId: string;
  /** the weak reward the sample carries */
  reward: number;
  /** mean of the valid judge votes */
  meanVote: number;
  votes: number;
}

export function atLeastOneReward(meanVote: number): number {
  return (1 + meanVote) * AT_LEAST_ONE.scale;
}

/**
 * The session's promoted turn, or null. `makesSample(e)`: whether a turn makes a sample on its
 * own (the pool's own rules: a ±1 reward or a hint).
 */
export function promotedTurn(store: Store, sessionId: string, heldBackShare: number, makesSample: (e: TurnEntry) => boolean): Promotion | null {
  if (!store.session(sessionId)?.closed) return null;
  let best: Promotion | null = null;
  for (const e of store.sessionTurns(sessionId)) {
    if (e.type !== "main") continue;
    if (makesSample(e)) return null;
    if (!e.judge || e.feedback?.thumbs || isHeldBack(e, heldBackShare)) continue;
    const votes = (store.readJudge(e.turnId)?.votes ?? []).map((v): number | null => v.score).filter((x): x is number => x === -1 || x === 0 || x === 1);
    if (votes.length === 0) continue;
    const meanVote = votes.reduce((a, b) => a + b, 0) / votes.length;
    if (best === null || meanVote >= best.meanVote) best = { turnId: e.turnId, reward: atLeastOneReward(meanVote), meanVote, votes: votes.length };
  }
  return best && best.meanVote >= 0 ? best : null;
}
