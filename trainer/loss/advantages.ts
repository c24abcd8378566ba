/**
 * Per-token advantages for each training method (method.md "Losses"). Plain numbers: they are
 * computed from log-probs that carry no gradient (lp_old, lp_teacher), before the update.
 * Every array is aligned with the sample's response tokens. `null` = the sample does not train.
 */
import { METHODS } from "../protocol.js";

export { METHODS };
export type Method = (typeof METHODS)[number];

/** The hint suffix the teacher sees, appended to the last user message. */
export function hintSuffix(hint: string): string {
  return `\n\n[user's hint / instruction]\n${hint}`;
}

/**
 * The hint a plain-completion teacher (a base model: no user message to append to) reads: a
 * paragraph before the prompt, so the text it continues is still exactly the student's.
 */
export function completionHintPrefix(hint: string): string {
  return `${hint}\n\n`;
}

/** Binary RL: A_t = r on every response token; reward 0 (or none) is masked out. */
export function binaryAdvantages(reward: number | undefined, length: number): number[] | null {
  if (reward === undefined || reward === 0) return null;
  return new Array<number>(length).fill(reward);
}

/** OPD: A_t = lp_teacher(a_t | s + hint) − lp_old(a_t | s). */
export function opdAdvantages(teacherLp: readonly number[], oldLp: readonly number[]): number[] {
  if (teacherLp.length !== oldLp.length) {
    throw new Error(`opdAdvantages: teacher has ${teacherLp.length} log-probs, old policy ${oldLp.length}`);
  }
  return oldLp.map((lp, t) => teacherLp[t] - lp);
}

export interface CombinedWeights {
  /** Weight of the OPD term. Default 1. */
  wOpd?: number;
  /** Weight of the RL term. Default 1. */
  wRl?: number;
}

/**
 * Combined (the default method), method.md's table:
 * hint and ±1 → w_opd·(lp_T − lp_old) + w_rl·r; hint only → OPD alone; ±1 only → RL alone;
 * neither → no sample. `teacherLp` is present exactly when the sample has a hint.
 */
export function combinedAdvantages(s: { reward?: number; teacherLp?: readonly number[]; oldLp: readonly number[] }, w: CombinedWeights = {}): number[] | null {
  const wOpd = w.wOpd ?? 1;
  const wRl = w.wRl ?? 1;
  const rl = s.reward !== undefined && s.reward !== 0 ? s.reward : null;
  const opd = s.teacherLp ? opdAdvantages(s.teacherLp, s.oldLp) : null;
  if (opd && rl !== null) return opd.map((a) => wOpd * a + wRl * rl);
  if (opd) return opd.map((a) => wOpd * a);
  if (rl !== null) return new Array<number>(s.oldLp.length).fill(wRl * rl);
  return null;
}

/** Advantages for a method on one sample (topk uses its own OPD loss; here only its RL term). */
export function advantagesFor(
  method: Method,
  s: { reward?: number; teacherLp?: readonly number[]; oldLp: readonly number[] },
  w: CombinedWeights = {},
): number[] | null {
  switch (method) {
    case "binary":
      return binaryAdvantages(s.reward, s.oldLp.length);
    case "opd":
      return s.teacherLp ? opdAdvantages(s.teacherLp, s.oldLp) : null;
    case "combined":
      return combinedAdvantages(s, w);
    case "topk": {
      const rl = binaryAdvantages(s.reward, s.oldLp.length);
      return rl ? rl.map((a) => (w.wRl ?? 1) * a) : null;
    }
  }
}
