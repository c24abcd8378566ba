/**
 * How far a long command is, from the block passes it runs. At a real size on a CPU a training
 * step or the gate's scoring takes minutes, so "step 0 of 4" alone says nothing for that long:
 * the model's passes tick (forward.ts, backward.ts: work in token-blocks) and the meter turns
 * the ticks into a fraction of the work planned up front, reported at most every `everyMs`.
 */
export class WorkMeter {
  private done = 0;
  private lastReport = -Infinity;

  /**
   * @param total work planned, in token-blocks (> 0)
   * @param report receives the fraction done, in [0, 1), never decreasing
   */
  constructor(
    private readonly total: number,
    private readonly report: (fraction: number) => void,
    private readonly everyMs = 1000,
  ) {}

  /** Adds work done (a SeqContext's `tick`). */
  readonly tick = (tokenBlocks: number): void => {
    this.done += tokenBlocks;
    const now = performance.now();
    if (now - this.lastReport < this.everyMs) return;
    this.lastReport = now;
    this.report(this.fraction);
  };

  /** The fraction done: the plan is an estimate, so it stops short of 1 (the caller says when the work is over). */
  get fraction(): number {
    return this.total > 0 ? Math.min(0.99, this.done / this.total) : 0;
  }
}
