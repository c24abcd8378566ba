/**
 * Whether someone is waiting for the engine's first token right now: from the moment a request
 * holds its sequence (its prompt is evaluated next) to its first sampled token, or its end.
 * Background work that shares the CPU listens and stands aside meanwhile (the trainer process
 * is suspended: training/trainerProcess.ts), because a nice value alone does not keep it off
 * what chat needs: on 2 cores the faster native trainer (issue 31) still raised chat's
 * first-token p95 during a learning cycle to 1.36–1.39× idle (bench/learning-cycle.ts).
 */
export class Foreground {
  private waiting = 0;
  private readonly listeners = new Set<(active: boolean) => void>();

  /** True while at least one request waits for its first token. */
  get active(): boolean {
    return this.waiting > 0;
  }

  /** A request starts waiting; the function returned ends the wait (calling it again does nothing). */
  begin(): () => void {
    this.waiting++;
    if (this.waiting === 1) this.notify(true);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.waiting--;
      if (this.waiting === 0) this.notify(false);
    };
  }

  /** Called with true when the first request starts waiting and false when the last one stops; returns the unsubscribe. */
  onChange(listener: (active: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(active: boolean): void {
    for (const l of this.listeners) {
      try {
        l(active);
      } catch (e) {
        // A listener's failure must not fail the chat request that changed the state.
        console.warn(`foreground listener failed: ${(e as Error).message}`);
      }
    }
  }
}
