/**
 * Reading judge outputs (method.md, Rewards): the last `\boxed{…}` is the vote, only −1, 0, 1
 * are valid, invalid votes are dropped, the majority wins, and a tie for the top count or no
 * valid vote gives 0. Hint votes add a hint between [HINT_START] and [HINT_END].
 */

export type Score = -1 | 0 | 1;

const BOXED = "\\boxed{";

/**
 * The content of the last complete `\boxed{…}` (braces balanced; "last" = closing last), or
 * null. A box whose content is itself one box (`\boxed{\boxed{1}}`) or braces (`\boxed{{1}}`)
 * is unwrapped; an unclosed box at the end (a cut-off output) is ignored.
 */
export function lastBoxed(text: string): string | null {
  let best: { end: number; content: string } | null = null;
  for (let at = text.indexOf(BOXED); at >= 0; at = text.indexOf(BOXED, at + 1)) {
    const open = at + BOXED.length;
    let depth = 1;
    let i = open;
    for (; i < text.length && depth > 0; i++) {
      if (text[i] === "{") depth++;
      else if (text[i] === "}") depth--;
    }
    if (depth !== 0) continue;
    const end = i - 1; // index of the closing brace
    if (!best || end > best.end) best = { end, content: text.slice(open, end) };
  }
  if (!best) return null;
  let c = best.content.trim();
  for (;;) {
    if (c.startsWith(BOXED) && balancedSpan(c, BOXED.length - 1) === c.length - 1) c = c.slice(BOXED.length, -1).trim();
    else if (c.startsWith("{") && balancedSpan(c, 0) === c.length - 1) c = c.slice(1, -1).trim();
    else return c;
  }
}

/** Index of the brace closing the one at `open`, or -1. */
function balancedSpan(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === "{") depth++;
    else if (s[i] === "}" && --depth === 0) return i;
  }
  return -1;
}

/** The vote in a judge output: −1, 0 or 1 from its last box; null when invalid or absent. */
export function parseScore(text: string, allowed: readonly Score[] = [-1, 0, 1]): Score | null {
  const c = lastBoxed(text);
  if (c === null) return null;
  const m = /^([+\-\u2212]?)\s*([01])$/.exec(c);
  if (!m) return null;
  const v = (m[2] === "1" ? 1 : 0) * (m[1] === "-" || m[1] === "\u2212" ? -1 : 1);
  const score = (v === 0 ? 0 : v) as Score; // no -0
  return allowed.includes(score) ? score : null;
}

export interface Majority {
  score: Score;
  /** index of a vote that agrees with the result (the representative explanation), or -1 */
  representative: number;
  counts: Record<"-1" | "0" | "1", number>;
}

/** Majority of the valid votes; a tie for the top count, or no valid vote, gives 0. */
export function majority(votes: ReadonlyArray<Score | null>): Majority {
  const counts = { "-1": 0, "0": 0, "1": 0 };
  for (const v of votes) if (v !== null) counts[String(v) as keyof typeof counts]++;
  const top = Math.max(counts["-1"], counts["0"], counts["1"]);
  const leaders = (["-1", "0", "1"] as const).filter((k) => counts[k] === top);
  const score: Score = top === 0 || leaders.length > 1 ? 0 : (Number(leaders[0]) as Score);
  // On a tie or no valid vote, nothing "agrees" with the 0 unless some vote said 0.
  return { score, representative: votes.findIndex((v) => v === score), counts };
}

/** The hint of a hint vote: the last complete [HINT_START]…[HINT_END], trimmed; null when none. */
export function parseHint(text: string): string | null {
  const end = text.lastIndexOf("[HINT_END]");
  if (end < 0) return null;
  const start = text.lastIndexOf("[HINT_START]", end);
  if (start < 0) return null;
  const hint = text.slice(start + "[HINT_START]".length, end).trim();
  return hint.length ? hint : null;
}

/** Longer hints than this many characters count (method.md: "longer than 10"). */
export const MIN_HINT_CHARS = 10;
export const MAX_HINTS = 3;

/**
 * Hint candidates from hint votes: votes that said 1 with a hint longer than 10 characters,
 * de-duplicated (whitespace and case folded), shortest first (stable), at most 3.
 */
export function selectHints(votes: ReadonlyArray<{ score: Score | null; hint: string | null }>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const v of votes) {
    if (v.score !== 1 || v.hint === null) continue;
    const hint = v.hint.trim();
    if (hint.length <= MIN_HINT_CHARS) continue;
    const key = hint.replace(/\s+/g, " ").toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(hint);
  }
  return out.sort((a, b) => a.length - b.length).slice(0, MAX_HINTS);
}
