import type { Sample } from "../../../models/samples/sample.js";

/** A trainable sample, named by the turn it came from. */
export interface PoolItem {
  id: string;
  /** the trainer's sample (live form: served token ids and log-probs) */
  sample: Sample;
  reward: number | null;
}

/**
 * What the supervisor needs from the sample pool (electron/core/rollout/samples.ts's
 * TurnSamplePool is the one the core uses). A claimed sample is not ready; `commit` marks a
 * run's samples as used for good, `release` returns them (the run failed). Claims that were
 * never committed return to the pool after a crash.
 */
export interface SamplePool {
  ready(): PoolItem[];
  claim(ids: readonly string[], runId: string): void;
  commit(runId: string): void;
  release(runId: string): void;
  /** Calls `fn` when the set of ready samples may have changed. Returns an unsubscribe. */
  onChange(fn: () => void): () => void;
}
