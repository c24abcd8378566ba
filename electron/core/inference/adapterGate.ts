import type { LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { assertLoadableGguf } from "../../../models/gguf/loadable.js";
import { assertFiniteWeights } from "../../../models/gguf/finiteWeights.js";

/** A sequence lent to one generation; `release()` exactly once when done (or failed). */
export interface Lease {
  sequence: LlamaContextSequence;
  /** Adapter version of the context this sequence belongs to ("base" when none). */
  adapterVersion: string;
  release(): void;
}

export interface SwapResult {
  /** How long admission was paused (new requests waited), in ms. */
  pauseMs: number;
  /** True when every in-flight generation finished before the switch (else they finish on the old adapter). */
  drained: boolean;
  /** Generations still running on the previous adapter at the switch. */
  stragglers: number;
  version: string;
}

export interface AdapterGateOptions {
  /** Creates a context with `sequences` sequences and the adapter (null = none). */
  createContext(adapterPath: string | null): Promise<LlamaContext>;
  /** Frees an adapter's memory once no context uses it (node-llama-cpp never does by itself). */
  releaseAdapter(adapterPath: string): Promise<void>;
  /** Longest wait for in-flight generations at a swap before switching anyway (ms). */
  drainTimeoutMs?: number;
}

interface Slot {
  context: LlamaContext;
  adapterPath: string | null;
  version: string;
  free: LlamaContextSequence[];
  inflight: number;
  retired: boolean;
  onIdle: Array<() => void>;
}

interface Waiter {
  prompt: readonly Token[];
  resolve(lease: Lease): void;
  reject(err: Error): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

function commonPrefix(a: readonly Token[], b: readonly Token[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Which free sequence serves `prompt` (`free` is in least-recently-released order). The one
 * whose cache holds the longest prefix of the prompt, among those where that reuse is at least
 * what the prompt would throw away of another conversation's cache (so a chat template's common
 * opening never evicts a conversation, while a shared long system prompt is reused); when none
 * qualifies, the least recently used sequence.
 */
export function pickSequence(free: readonly { contextTokens: readonly Token[] }[], prompt: readonly Token[]): number {
  let best = -1;
  let bestLen = -1;
  for (let i = 0; i < free.length; i++) {
    const held = free[i].contextTokens;
    const len = commonPrefix(held, prompt);
    if (len >= held.length - len && len > bestLen) {
      best = i;
      bestLen = len;
    }
  }
  return best >= 0 ? best : 0;
}

export class AbortedError extends Error {
  constructor() {
    super("request aborted");
    this.name = "AbortError";
  }
}

/**
 * Admission to the model: a pool of context sequences with a FIFO queue beyond it, and the
 * adapter hot-swap. A swap builds the new adapter's context first (while the old one serves),
 * then pauses admission, waits (bounded) for in-flight generations, switches, resumes. Requests
 * that arrive meanwhile wait in the queue; none fail. The old context is disposed, and its
 * adapter's memory released, when its last straggler finishes, so memory stays bounded over
 * any number of swaps.
 */
export class AdapterGate {
  private current!: Slot;
  private readonly queue: Waiter[] = [];
  private paused = false;
  private swapping: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly drainTimeoutMs: number;

  constructor(private readonly opts: AdapterGateOptions) {
    this.drainTimeoutMs = opts.drainTimeoutMs ?? 100;
  }

  async init(adapterPath: string | null, version: string): Promise<void> {
    this.current = await this.makeSlot(adapterPath, version);
  }

  get adapterVersion(): string {
    return this.current.version;
  }
  get adapterPath(): string | null {
    return this.current.adapterPath;
  }
  get contextSize(): number {
    return this.current.context.contextSize;
  }
  get queued(): number {
    return this.queue.length;
  }
  get inflight(): number {
    return this.current.inflight;
  }

  private async makeSlot(adapterPath: string | null, version: string): Promise<Slot> {
    // An adapter GGUF passes the app's own reader before llama.cpp reads it (issue 26 F3).
    if (adapterPath) assertLoadableGguf(adapterPath);
    // ...and holds finite weights: a NaN adapter would answer with nothing (issue 26 F7).
    if (adapterPath) assertFiniteWeights(adapterPath);
    const context = await this.opts.createContext(adapterPath);
    const free: LlamaContextSequence[] = [];
    while (context.sequencesLeft > 0) free.push(context.getSequence());
    return { context, adapterPath, version, free, inflight: 0, retired: false, onIdle: [] };
  }

  /** Waits for a sequence (FIFO); the free sequence that pickSequence chooses for `prompt`. */
  acquire(prompt: readonly Token[], signal?: AbortSignal): Promise<Lease> {
    if (this.closed) return Promise.reject(new Error("engine is closed"));
    if (signal?.aborted) return Promise.reject(new AbortedError());
    return new Promise<Lease>((resolve, reject) => {
      const w: Waiter = { prompt, resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.queue.indexOf(w);
          if (i >= 0) {
            this.queue.splice(i, 1);
            reject(new AbortedError());
          }
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.queue.push(w);
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (!this.paused && this.queue.length > 0 && this.current.free.length > 0) {
      const w = this.queue.shift()!;
      if (w.signal && w.onAbort) w.signal.removeEventListener("abort", w.onAbort);
      const slot = this.current;
      const sequence = slot.free.splice(pickSequence(slot.free, w.prompt), 1)[0];
      slot.inflight++;
      let released = false;
      w.resolve({
        sequence,
        adapterVersion: slot.version,
        release: () => {
          if (released) return;
          released = true;
          this.releaseTo(slot, sequence);
        },
      });
    }
  }

  private releaseTo(slot: Slot, sequence: LlamaContextSequence): void {
    slot.inflight--;
    slot.free.push(sequence);
    if (slot.inflight === 0) for (const f of slot.onIdle.splice(0)) f();
    if (slot.retired) {
      if (slot.inflight === 0) void this.disposeSlot(slot);
    } else this.dispatch();
  }

  private waitIdle(slot: Slot, timeoutMs: number): Promise<boolean> {
    if (slot.inflight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const i = slot.onIdle.indexOf(done);
        if (i >= 0) slot.onIdle.splice(i, 1);
        resolve(false);
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      slot.onIdle.push(done);
    });
  }

  private async disposeSlot(slot: Slot): Promise<void> {
    await slot.context.dispose();
    // Another live slot may use the same file (a swap to the adapter already serving).
    if (slot.adapterPath && slot.adapterPath !== this.current.adapterPath) await this.opts.releaseAdapter(slot.adapterPath);
  }

  /** Installs `adapterPath` (null = base model) as `version`. Swaps run one at a time. */
  swapAdapter(adapterPath: string | null, version: string): Promise<SwapResult> {
    const run = this.swapping.then(() => this.doSwap(adapterPath, version));
    this.swapping = run.catch(() => undefined);
    return run;
  }

  private async doSwap(adapterPath: string | null, version: string): Promise<SwapResult> {
    if (this.closed) throw new Error("engine is closed");
    const next = await this.makeSlot(adapterPath, version); // built while the old adapter keeps serving
    const t0 = performance.now();
    this.paused = true;
    const old = this.current;
    let drained: boolean;
    try {
      drained = await this.waitIdle(old, this.drainTimeoutMs);
      this.current = next;
      old.retired = true;
    } finally {
      this.paused = false;
    }
    const pauseMs = performance.now() - t0;
    const stragglers = old.inflight;
    this.dispatch();
    if (old.inflight === 0) await this.disposeSlot(old);
    return { pauseMs, drained, stragglers, version };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.queue.splice(0)) w.reject(new Error("engine is closed"));
    await this.swapping;
    await this.current?.context.dispose();
  }
}
