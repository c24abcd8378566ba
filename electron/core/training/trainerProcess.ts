import type { SupervisorContext } from "./supervisorTypes.js";
import { WorkerClient, WorkerError, WorkerExitError } from "./workerClient.js";

/**
 * The longest the trainer stays suspended for one first-token wait (inference/foreground.ts):
 * a long prompt's evaluation lets it run again after this, so chat can never starve learning.
 */
export const FOREGROUND_MAX_SUSPEND_MS = 2000;

/**
 * The trainer process: started when there is first something to train, restarted with back-off
 * after a crash (not after pause(), which ends it on purpose), let go without a restart when it
 * refuses the model (memory), and measured for the status. Suspended while chat waits for a
 * first token (SIGSTOP/SIGCONT; `o.foreground`).
 */
export class TrainerProcess {
  worker: WorkerClient | null = null;
  /** settles once the trainer started by the latest spawn() is loaded (or could not start) */
  ready: Promise<void> | null = null;
  /** the current worker answered its init */
  workerReady = false;
  /** the trainer was stopped by pause(), not by a crash: no restart */
  pausedKill = false;
  restartTimer: NodeJS.Timeout | null = null;
  private backoffMs: number;
  private suspendTimer: NodeJS.Timeout | null = null;
  private readonly unsubscribe: (() => void) | null;

  constructor(private readonly ctx: SupervisorContext) {
    this.backoffMs = ctx.o.restartBackoffMs ?? 1000;
    this.unsubscribe = ctx.o.foreground?.onChange((active) => (active ? this.standAside() : this.carryOn())) ?? null;
  }

  /** Chat waits for a first token: suspend the trainer, for FOREGROUND_MAX_SUSPEND_MS at most. */
  private standAside(): void {
    if (this.ctx.stopping || !this.worker?.suspend() || this.suspendTimer) return;
    this.suspendTimer = setTimeout(() => this.carryOn(), FOREGROUND_MAX_SUSPEND_MS);
    this.suspendTimer.unref?.();
  }

  private carryOn(): void {
    if (this.suspendTimer) clearTimeout(this.suspendTimer);
    this.suspendTimer = null;
    this.worker?.resume();
  }

  /** The trainer when it is up and loaded; null otherwise. */
  get running(): WorkerClient | null {
    return this.worker && this.workerReady ? this.worker : null;
  }

  /** A run went through: the next crash restarts after the first delay again. */
  resetBackoff(): void {
    this.backoffMs = this.ctx.o.restartBackoffMs ?? 1000;
  }

  spawn(): void {
    const { ctx } = this;
    const st = ctx.st;
    if (ctx.stopping) return;
    const w = new WorkerClient(ctx.o.worker);
    this.worker = w;
    this.workerReady = false;
    st.trainerPid = w.pid ?? null;
    st.trainerMemory = null; // a new process: the old one's figures no longer hold
    ctx.setPhase(st.paused ? "paused" : "starting");
    void w.exit.then((e) => this.onExit(w, e));
    const initDir = ctx.activeDir();
    this.ready = w.request({ type: "init", modelPath: ctx.o.modelPath, settings: ctx.settings(), resumeDir: initDir }).then(async (r) => {
      // A checkpoint activated while the trainer was starting: train on from that one.
      const now = ctx.activeDir();
      if (now !== initDir) await w.request({ type: "load", dir: now });
      st.backend = r.backend;
      st.device = r.device;
      st.memory = r.plan;
      await this.measure(w);
      this.workerReady = w === this.worker;
      ctx.setPhase(st.paused ? "paused" : "idle");
      ctx.loop.kick();
    });
    this.ready.catch((e: Error) => this.onStartFailed(w, e));
  }

  private onStartFailed(w: WorkerClient, e: Error): void {
    const st = this.ctx.st;
    if (e instanceof WorkerExitError) return; // onExit restarts it
    if (e instanceof WorkerError && e.plan) {
      // Not a crash to retry: this model does not fit this machine. Serving goes on; the
      // trainer is let go without a restart (onExit would restart it): "Train now" plans again.
      st.memory = e.plan;
      // The refusal carries no backend field; its plan's summary names the one it planned for.
      st.backend ??= e.plan.backend;
      st.lastError = `learning is off for this model: ${e.message}`;
      if (this.worker === w) {
        this.worker = null;
        st.trainerPid = null;
      }
    } else {
      st.lastError = `trainer could not start: ${e.message}`;
    }
    this.ctx.setPhase("error");
    w.kill();
  }

  private onExit(w: WorkerClient, e: WorkerExitError): void {
    const { ctx } = this;
    const st = ctx.st;
    if (this.worker !== w) return;
    this.worker = null;
    st.trainerPid = null;
    if (ctx.stopping) return;
    if (this.pausedKill) {
      this.pausedKill = false;
      // Resumed before the stopped trainer was gone: carry on (kick starts a new trainer).
      ctx.setPhase(st.paused ? "paused" : "idle");
      if (!st.paused) ctx.loop.kick();
      return;
    }
    st.restarts++;
    st.lastError = `${e.message}; restarting in ${(this.backoffMs / 1000).toFixed(1)} s`;
    ctx.setPhase("restarting");
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.spawn();
    }, this.backoffMs);
    this.restartTimer.unref?.();
    this.backoffMs = Math.min(this.backoffMs * 2, 30_000);
  }

  /** What the trainer holds, once loaded and after each run, for the status (a failed measure is not a failed run). */
  async measure(w: WorkerClient): Promise<void> {
    try {
      const m = await w.request({ type: "memory" });
      this.ctx.st.trainerMemory = {
        rssBytes: m.rssBytes,
        tensorBytes: m.tensorBytes,
        ...(m.passCacheBytes !== undefined ? { passCacheBytes: m.passCacheBytes } : {}),
        wasmHeapBytes: m.wasmHeapBytes,
        at: new Date().toISOString(),
      };
    } catch {
      // The trainer went away or predates the command: the last figures stay, with their time.
    }
  }

  /** Has the running trainer train on from `dir` (null: a fresh adapter); a failure is the status's lastError. */
  async trainOnFrom(dir: string | null, what: string): Promise<void> {
    const w = this.running;
    if (w) await w.request({ type: "load", dir }).catch((e: Error) => (this.ctx.st.lastError = `trainer could not load ${what}: ${e.message}`));
  }

  /**
   * Ends an idle trainer to give its memory back (the machine is short of memory): no restart;
   * the loop starts one again when there is work and memory (runLoop.ts kick).
   */
  stopIdle(reason: string): void {
    const w = this.running;
    if (!w) return;
    console.warn(`stopping the idle trainer (pid ${w.pid ?? "?"}): ${reason}`);
    this.pausedKill = true;
    this.ctx.st.trainerMemory = null;
    void w.stop();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.carryOn();
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const w = this.worker;
    this.worker = null;
    await w?.stop();
  }
}
