import crypto from "node:crypto";
import { rewardOf, type Store } from "../store/store.js";
import { isHeldBack } from "../rollout/heldBack.js";
import type { ProbePrompt } from "../inference/fluencyProbe.js";
import type { ScoredSequence } from "../../../trainer/protocol.js";

/** What the publish gate measures a candidate on, read from the turn log. */

/** Turn ids, oldest first: recent main turns, liked and disliked ones, held-back ones with a verdict. */
export function turnSets(store: Store): { recent: string[]; liked: string[]; disliked: string[]; heldBack: string[] } {
  const share = store.settings.heldBackShare;
  const recent: string[] = [];
  const liked: string[] = [];
  const disliked: string[] = [];
  const heldBack: string[] = [];
  for (const e of store.turnEntries()) {
    if (e.type !== "main" || e.stopped) continue; // a stopped answer is cut short: no gate prompt, never trained on
    recent.push(e.turnId);
    const r = rewardOf(e).reward;
    if (r === 1) liked.push(e.turnId);
    else if (r === -1) disliked.push(e.turnId);
    if ((r !== null || e.feedback?.hint) && isHeldBack(e, share)) heldBack.push(e.turnId);
  }
  return { recent, liked, disliked, heldBack };
}

/**
 * Recent main turns (KL to the serving adapter and to the base), liked and disliked answers,
 * and the held-back turns with a verdict (KL to the base), newest last, as token sequences;
 * `n` of each at most.
 */
export function evalSets(
  store: Store,
  n: number,
): { prompts: ScoredSequence[]; liked: ScoredSequence[]; disliked: ScoredSequence[]; heldBack: ScoredSequence[] } {
  const { recent, liked, disliked, heldBack } = turnSets(store);
  const seqs = (ids: string[]) =>
    ids.slice(-n).flatMap((id) => {
      const t = store.readTurn(id);
      if (t.promptTokens.length === 0 || t.responseTokens.length === 0) return [];
      return [{ tokens: [...t.promptTokens, ...t.responseTokens], start: t.promptTokens.length }];
    });
  return { prompts: seqs(recent), liked: seqs(liked), disliked: seqs(disliked), heldBack: seqs(heldBack) };
}

/**
 * The turns the gate's fluency check may pick from: the newest this many of each set. Within
 * them it takes those with the smallest hash of their prompt (a bottom-k sample), not the newest: a
 * new turn then changes the picks only when its own hash is among the smallest (about k in this
 * many turns), so the base answers sampled ahead for them (fluencyProbe.ts `prepare`) stay
 * wanted while turns come in. Picking the newest, a feed of a turn every ~15 s moved every recent
 * pick, and a 0.5B cycle found 2 of its 32 base answers ready after 24 were sampled ahead
 * (README, e84d575).
 */
export const PROBE_PICK_WINDOW = 32;

/**
 * A prompt's place in the bottom-k order and its answers' seeds, from its tokens, not its turn's
 * id: ids are random, so the same conversation replayed (the eval's courses) picked other prompts
 * and seeds each time, and the gate's verdicts, hence the courses, differed between identical runs.
 */
const promptHash = (tokens: readonly number[]): Buffer =>
  crypto
    .createHash("sha256")
    .update(`probe-pick:${tokens.join(",")}`)
    .digest();

/**
 * Distinct prompts of recent held-back turns and recent main turns (half each at most; a stable
 * sample of the newest PROBE_PICK_WINDOW of each), with their served settings: `total` prompts,
 * `samples` answers each (fixed seeds), `cap` tokens at most.
 */
export function probePrompts(store: Store, total: number, samples: number, cap: number): ProbePrompt[] {
  const { recent, heldBack } = turnSets(store);
  const seen = new Set<string>();
  type Pick = { turn: ReturnType<Store["readTurn"]>; hash: Buffer };
  const picked: Pick[] = [];
  const take = (ids: string[], k: number) => {
    // Each turn read and its prompt hashed once: the hash orders the window and seeds the answers.
    const window = ids
      .slice(-PROBE_PICK_WINDOW)
      .map((id) => {
        const turn = store.readTurn(id);
        const hash = promptHash(turn.promptTokens);
        return { turn, hash, order: hash.toString("hex") };
      })
      .sort((a, b) => (a.order < b.order ? -1 : 1));
    for (const { turn, hash } of window) {
      if (k === 0) break;
      const key = turn.promptTokens.join(",");
      if (turn.promptTokens.length === 0 || seen.has(key)) continue;
      seen.add(key);
      picked.push({ turn, hash });
      k--;
    }
  };
  take(heldBack, Math.floor(total / 2));
  take(recent, total - picked.length);
  return picked.flatMap(({ turn: t, hash }) => {
    const seed = hash.readUInt32BE(0) & 0x7fffffff;
    const maxTokens = Math.max(1, Math.min(cap, t.sampling.maxTokens ?? cap));
    return Array.from({ length: samples }, (_, k) => ({
      tokens: t.promptTokens,
      temperature: t.sampling.temperature,
      topP: t.sampling.topP,
      maxTokens,
      seed: (seed + k) % 2 ** 31,
    }));
  });
}
