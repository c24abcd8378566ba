import { performance } from "node:perf_hooks";

/**
 * Writes server-sent events to a socket, coalescing the ones that arrive within `windowMs` of
 * the last socket write into one write. On a fast model tokens come every millisecond or so,
 * and one write per token was the largest CPU cost per token in the server (profiled); on a
 * real model tokens are tens of ms apart and every event still goes out at once. Each event
 * stays its own `data:` line, so clients see exactly the same stream.
 */
export class SseWriter {
  private buffer = "";
  private timer: NodeJS.Timeout | null = null;
  private lastFlush = -Infinity;

  constructor(
    private readonly out: { write(chunk: string): unknown; destroyed: boolean },
    private readonly windowMs = 5,
  ) {}

  /** Queues an event; it is written now if the socket has been quiet for `windowMs`. */
  write(event: string): void {
    if (this.out.destroyed) return;
    this.buffer += event;
    if (this.timer !== null) return;
    const wait = this.windowMs - (performance.now() - this.lastFlush);
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  /** Writes whatever is queued, at once (first token, end of stream, errors). */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer && !this.out.destroyed) this.out.write(this.buffer);
    this.buffer = "";
    this.lastFlush = performance.now();
  }
}
