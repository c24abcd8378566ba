/**
 * How many tokens background llama.cpp work in the core (the gate's fluency probe, each of its
 * sequences; the local judge) sends in one prompt or scoring evaluation. It runs beside chat in
 * the same process: llama.cpp cannot stop a batch once it runs, and while it runs chat's own
 * evaluation shares the cores with it (threads.ts), so chat's first token can be late by up to
 * one background batch. The probe's fixed 16 tokens a sequence (4 × 16 a batch) made chat wait
 * up to 1.4 s on the Qwen3-1.7B shape on 2 cores (bench/learning-cycle.ts), so the chunk is sized from the work's own measured evaluations for
 * a batch to take about CHUNK_TARGET_MS on this machine and model, never below MIN_CHUNK. A
 * batch cannot take less than llama.cpp needs to read the weights once: on 2 cores that floor is
 * above the target at real sizes (~0.15 s on the Qwen2.5-0.5B shape), so there the chunk is
 * MIN_CHUNK and chat waits at most about the floor. The probe pays for it: 8 + 8 answers took
 * 62–66 s instead of 46–49 s on the 0.5B shape; chat's first-token p95 during a cycle went from
 * 1.43× idle to 1.16× (README, issue 31).
 */
export const CHUNK_TARGET_MS = 80;
export const MIN_CHUNK = 2;
/** Weight of the newest evaluation in the running estimate. */
const EWMA = 0.3;

export class BackgroundChunk {
  /** Milliseconds per token of one evaluation (the batch's other sequences included): null until measured. */
  private msPerToken: number | null = null;

  /** `max`: the chunk before any measure and at most (tokens). */
  constructor(
    private readonly max: number,
    private readonly targetMs = CHUNK_TARGET_MS,
  ) {}

  /** Tokens for the next evaluation. */
  get size(): number {
    if (this.msPerToken === null) return this.max;
    return Math.max(MIN_CHUNK, Math.min(this.max, Math.floor(this.targetMs / this.msPerToken)));
  }

  /** Records one evaluation of `tokens` tokens that took `ms` (batched with whatever else ran). */
  observe(tokens: number, ms: number): void {
    if (tokens <= 0 || !Number.isFinite(ms) || ms < 0) return;
    const per = ms / tokens;
    this.msPerToken = this.msPerToken === null ? per : EWMA * per + (1 - EWMA) * this.msPerToken;
  }
}
