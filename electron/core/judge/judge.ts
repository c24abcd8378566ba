import type { JudgeRecord } from "../store/records.js";
import { JudgeUnavailableError, type Completion, type JudgeBackend } from "./backends.js";
import { DEFAULT_BUDGET, halve, hintMessages, prmMessages, type JudgeInput, type PromptBudget } from "./prompts.js";
import { majority, parseHint, parseScore, selectHints, type Score } from "./votes.js";

export interface JudgeOptions {
  /** m votes (default 3) */
  votes?: number;
  /** default 0.6 */
  temperature?: number;
  /** tokens per judge output (default 384) */
  maxTokens?: number;
  /** first vote's seed; the others use seed+1, seed+2… (default random) */
  seed?: number;
  /** also run hint extraction (default true) */
  hints?: boolean;
  signal?: AbortSignal;
}

export interface HintVote {
  score: Score | null;
  hint: string | null;
  text: string;
  error?: string;
}

/** One evaluation, as the judge line records it. */
export type JudgeOutcome = Omit<JudgeRecord, "kind" | "v" | "time" | "sessionId" | "turnId">;

function voteOf(c: Completion, allowed: readonly Score[]): { score: Score | null; text: string; error?: string } {
  if (c.error !== undefined) return { score: null, text: "", error: c.error };
  return { score: parseScore(c.text, allowed), text: c.text };
}

/** Shrinks the prompt's budget until the backend can hold it (local models with small contexts). */
function fitted(backend: JudgeBackend, input: JudgeInput, maxTokens: number, build: typeof prmMessages) {
  let budget: PromptBudget = DEFAULT_BUDGET;
  for (;;) {
    const messages = build(input, budget);
    if (backend.fits(messages, maxTokens)) return messages;
    if (budget.answer < 50) throw new JudgeUnavailableError(`the judge's context (${backend.name}) cannot hold even a trimmed judge prompt`);
    budget = halve(budget);
  }
}

/**
 * Runs the PRM judge (m votes: \boxed{1|-1|0}, majority, ties → 0) and the hint extractor (m
 * votes: \boxed{1|-1} + [HINT_START]…[HINT_END]) on one turn. Throws JudgeUnavailableError
 * when every PRM vote failed to get an answer at all (endpoint down): nothing to record then.
 */
export async function judgeTurn(backend: JudgeBackend, input: JudgeInput, opts: JudgeOptions = {}): Promise<JudgeOutcome> {
  const m = Math.max(1, opts.votes ?? 3);
  const temperature = opts.temperature ?? 0.6;
  const maxTokens = opts.maxTokens ?? 384;
  const base = opts.seed ?? Math.floor(Math.random() * 2 ** 30);
  const seeds = Array.from({ length: m }, (_, i) => base + i);

  const prm = await backend.complete(fitted(backend, input, maxTokens, prmMessages), { temperature, seeds, maxTokens, signal: opts.signal });
  if (prm.every((c) => c.error !== undefined)) throw new JudgeUnavailableError(prm[0]?.error ?? "judge gave no output");
  const votes = prm.map((c) => voteOf(c, [-1, 0, 1]));
  const maj = majority(votes.map((v) => v.score));

  let hintVotes: HintVote[] = [];
  if (opts.hints ?? true) {
    // Distinct seeds from the PRM votes': the same seed on a different prompt is fine, but keep them apart for the log's sake.
    const hintSeeds = seeds.map((s) => s + m);
    const hv = await backend.complete(fitted(backend, input, maxTokens, hintMessages), { temperature, seeds: hintSeeds, maxTokens, signal: opts.signal });
    hintVotes = hv.map((c) => ({ ...voteOf(c, [-1, 1]), hint: c.error === undefined ? parseHint(c.text) : null }));
  }

  return {
    reward: maj.score,
    votes,
    hints: selectHints(hintVotes),
    hintVotes,
    representative: maj.representative >= 0 ? votes[maj.representative].text : null,
    judge: backend.name,
  };
}
