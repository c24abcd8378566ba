/**
 * What a job's next step evaluates: a chunk of prompt or answer tokens (its time is what the
 * chunk size is tuned by), or one token to sample from.
 */
export type StepKind = "chunk" | "token";

/**
 * One item's work on a sequence, written as an async generator: it yields (the kind of its next
 * step) just before each evaluation, and returns its result. Its code before the first yield runs
 * when the job is given a sequence (clearing it, say); each step runs in a round.
 */
export type Job<R> = AsyncGenerator<StepKind, R, void>;

/**
 * Runs `start(seq, item)` for every item, one job per sequence (of a llama.cpp context) at a
 * time, in lockstep: each round resumes every active job together, so their evaluations are
 * queued in the same tick and llama.cpp evaluates them as one batch, and the next round starts
 * only when all of them are done. Without the barrier a sequence that has its token first queues
 * the next one at once, and node-llama-cpp 3.22.1 dispatches it while the others are still being
 * sampled: on the 1.7B shape on 2 cores a decode round of 4 sequences took 546 ms so, against
 * 303 ms queued together (bench/probe-alone.ts, issue 31). `round` wraps each round (giving way
 * to chat before it, timing it); `chunked` says whether any of its steps evaluates a chunk.
 * Results come back in item order. `affinity` (higher: better) lets a free sequence take the
 * waiting item it suits best (the one whose prompt it already holds, say). After a failure no
 * new item starts, and the first error is thrown once the round's other steps have ended (the
 * caller disposes the context after).
 */
export async function inLockstep<S, T, R>(
  items: readonly T[],
  seqs: readonly S[],
  start: (seq: S, item: T) => Job<R>,
  round: (run: () => Promise<void>, chunked: boolean) => Promise<void>,
  affinity?: (seq: S, item: T) => number,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  const slots: Array<{ job: Job<R>; i: number; kind: StepKind } | null> = seqs.map(() => null);
  /** items not started yet, in order */
  const waiting = items.map((_, i) => i);
  /** The waiting item `seq` suits best (the highest affinity; the earliest of equals). */
  const take = (seq: S): number => {
    let best = 0;
    if (affinity) {
      let score = -Infinity;
      for (const [k, i] of waiting.entries()) {
        const a = affinity(seq, items[i]);
        if (a > score) [best, score] = [k, a];
      }
    }
    return waiting.splice(best, 1)[0];
  };
  /** the first error a job threw */
  const failed: unknown[] = [];
  /** Takes a job's step result: its result when it returned, else the kind of its next step. */
  const settle = (s: number, i: number, job: Job<R>, r: PromiseSettledResult<IteratorResult<StepKind, R>>) => {
    slots[s] = null;
    if (r.status === "rejected") failed.push(r.reason);
    else if (r.value.done) out[i] = r.value.value;
    else slots[s] = { job, i, kind: r.value.value };
  };
  try {
    for (;;) {
      // Free sequences take the items waiting (a job's start runs up to its first step).
      for (let s = 0; s < seqs.length; s++) {
        while (!slots[s] && failed.length === 0 && waiting.length > 0) {
          const i = take(seqs[s]);
          const job = start(seqs[s], items[i]);
          const [r] = await Promise.allSettled([job.next()]);
          settle(s, i, job, r);
        }
      }
      const active = slots.flatMap((x, s) => (x ? [{ ...x, s }] : []));
      if (failed.length > 0 || active.length === 0) break;
      await round(
        async () => {
          const results = await Promise.allSettled(active.map((a) => a.job.next()));
          active.forEach((a, k) => settle(a.s, a.i, a.job, results[k]));
        },
        active.some((a) => a.kind === "chunk"),
      );
    }
  } finally {
    // Jobs left suspended (a failure, an abort while giving way) are closed.
    for (const x of slots) if (x) await x.job.return(undefined as R).catch(() => undefined);
  }
  if (failed.length > 0) throw failed[0];
  return out;
}

/** `job`, with `after` called on its result when it returns (counting, progress). */
export async function* thenJob<R>(job: Job<R>, after: (result: R) => void): Job<R> {
  const r = yield* job;
  after(r);
  return r;
}
