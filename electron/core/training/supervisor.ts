import type { PhaseProgressView, TrainingPhase } from "../api/training.js";
import type { SwapResult } from "../inference/adapterGate.js";
import type { TrainSettings } from "../../../trainer/protocol.js";
import { GgufError } from "../../../models/gguf/types.js";
import { trainSettingsOf } from "./trainOptions.js";
import { CheckpointError, modelFileOf, trainedOn, type CheckpointEntry } from "./checkpoints.js";
import { LrPolicy } from "./lrPolicy.js";
import { ServeWatch, type WatchFinding, type WatchTarget } from "./serveWatch.js";
import { Serving } from "./serving.js";
import { TrainerProcess } from "./trainerProcess.js";
import { RunLoop } from "./runLoop.js";
import { revertServed } from "./watchRevert.js";
import { importCandidate } from "./importCheckpoint.js";
import { ActivationError, type ImportResult, type SupervisorContext, type SupervisorOptions, type TrainingLiveStatus } from "./supervisorTypes.js";

export { ActivationError } from "./supervisorTypes.js";
export type { AdapterTarget, ImportResult, SupervisorOptions, TrainingLiveStatus } from "./supervisorTypes.js";
export type { TrainingPhase };

/**
 * Runs the trainer process and the learning loop: batches from the pool → train → evaluate →
 * gate → checkpoint → hot-swap. The trainer is a separate, lower-priority process: serving never
 * waits for it. If it dies, the run's samples go back to the pool, the staging directory is
 * removed, and a new trainer starts (with back-off) from the checkpoint being served.
 *
 * The parts, each in its own module: the run loop (runLoop.ts), the trainer process
 * (trainerProcess.ts), the publish gate's figures (publishGate.ts, evalSets.ts), what is served
 * and watched (serving.ts), the watch's rollback (watchRevert.ts), adapter imports
 * (importCheckpoint.ts) and the learning-rate policy (lrPolicy.ts). This class holds the shared
 * status and the lock, and answers the API.
 */
export class TrainingSupervisor implements SupervisorContext {
  readonly st: TrainingLiveStatus;
  readonly lr: LrPolicy;
  readonly trainer: TrainerProcess;
  readonly loop: RunLoop;
  readonly serving: Serving;
  stopping = false;
  /** serialises runs, activations, rollbacks and imports */
  private lock: Promise<unknown> = Promise.resolve();
  private memoryTimer: NodeJS.Timeout | null = null;
  private offPool: () => void;
  private offSettings: () => void;
  private readonly watch: ServeWatch | null;

  constructor(readonly o: SupervisorOptions) {
    this.st = {
      state: "starting",
      paused: false,
      step: null,
      steps: null,
      stepSeconds: null,
      progress: null,
      loss: null,
      runId: null,
      samplesWaiting: 0,
      batchSize: o.store.settings.batchSize,
      backend: null,
      memory: null,
      device: null,
      activeCheckpoint: o.store.state.training.activeCheckpoint,
      lastError: null,
      lrScale: 1,
      lastSwap: null,
      trainerPid: null,
      trainerMemory: null,
      restarts: 0,
      watch: null,
      lastRevert: null,
    };
    this.lr = new LrPolicy(o.store, o.minLrScale);
    this.trainer = new TrainerProcess(this);
    this.loop = new RunLoop(this);
    this.watch =
      o.watch === false ? null : new ServeWatch({ store: o.store, bus: o.bus, probe: o.probe, rule: o.watch, onRegression: (t, f) => this.revert(t, f) });
    this.serving = new Serving(o, this.st, this.watch);
    this.offPool = o.pool.onChange(() => {
      this.loop.unblock();
      this.loop.refreshWaiting();
      this.loop.kick();
    });
    this.offSettings = o.bus.on("settings", () => {
      this.st.batchSize = o.store.settings.batchSize;
      this.publishStatus();
      this.loop.kick();
    });
  }

  /**
   * Starts supervising. The trainer process itself starts when there is first something to
   * train (it loads tfjs and the model: no cost for an app that never gets feedback): ahead of
   * the run, once a sample is ready (`startAhead`), and it stays up between runs unless the
   * machine runs short of memory (runLoop.ts kick).
   */
  start(): void {
    const n = this.o.checkpoints.cleanStaging();
    if (n > 0) console.warn(`removed ${n} unfinished checkpoint${n > 1 ? "s" : ""} left by a trainer that stopped mid-write`);
    this.o.checkpoints.recoverOrphans();
    this.settleUsedSamples();
    const history = this.o.checkpoints.list();
    this.st.lrScale = this.lr.begin(history.map((c) => ({ n: c.id, createdAt: c.createdAt, verdict: c.verdict, reverted: c.reverted })));
    // The watch on a checkpoint the loop put into service goes on after a restart.
    this.serving.resumeWatch();
    const last = history.filter((c) => c.reverted).at(-1);
    if (last?.reverted) this.st.lastRevert = { ...last.reverted, checkpoint: last.id };
    this.loop.refreshWaiting();
    this.setPhase(this.st.paused ? "paused" : "idle");
    this.loop.kick();
    // An idle trainer gives its memory back when the machine runs short (runLoop.ts kick).
    this.memoryTimer = setInterval(() => this.loop.kick(), this.o.memoryCheckMs ?? 30_000);
    this.memoryTimer.unref?.();
  }

  /**
   * Samples that a checkpoint holds but the pool still offers (the core stopped between
   * writing the checkpoint and committing its samples): committed now, so none trains twice.
   */
  private settleUsedSamples(): void {
    const ready = new Set(this.o.pool.ready().map((p) => p.id));
    for (const c of this.o.checkpoints.list()) {
      const ids = c.sampleIds.filter((id) => ready.has(id));
      if (ids.length === 0) continue;
      const runId = `settle-${c.runId}`;
      this.o.pool.claim(ids, runId);
      this.o.pool.commit(runId);
      for (const id of ids) ready.delete(id);
    }
  }

  status(): TrainingLiveStatus {
    return { ...this.st, lastSwap: this.st.lastSwap && { ...this.st.lastSwap }, watch: this.watch?.status() ?? null };
  }

  get trainerPid(): number | null {
    return this.trainer.worker?.pid ?? null;
  }

  settings(): TrainSettings {
    return trainSettingsOf(this.o.store.settings);
  }

  activeDir(): string | null {
    const n = this.o.store.state.training.activeCheckpoint;
    if (n === null) return null;
    return this.o.checkpoints.get(n)?.dir ?? null;
  }

  setPhase(p: TrainingPhase): void {
    this.st.state = p;
    this.st.progress = null;
    if (p !== "training" && p !== "evaluating" && p !== "publishing") {
      this.st.step = null;
      this.st.steps = null;
      this.st.runId = null;
    }
    this.publishStatus();
  }

  /**
   * Starts reporting a part of a run (status.progress): returns the function that takes its
   * fraction done, with the time left at the rate so far.
   */
  track(part: PhaseProgressView["part"]): (fraction: number) => void {
    const t0 = performance.now();
    this.st.progress = { part, fraction: 0, secondsLeft: null };
    this.publishStatus();
    return (fraction) => {
      const f = Math.min(1, Math.max(0, fraction));
      const elapsed = (performance.now() - t0) / 1000;
      this.st.progress = { part, fraction: f, secondsLeft: f > 0 ? (elapsed * (1 - f)) / f : null };
      this.publishStatus();
    };
  }

  publishStatus(): void {
    this.o.bus.emit("training", { training: { ...this.status() } });
  }

  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  /**
   * "Train now": a run on whatever is ready, even less than a batch. With a run in progress and
   * nothing else ready (it took the samples), there is nothing to start: `running` says so.
   */
  runNow(): { started: boolean; running: boolean; samplesWaiting: number; reason: string | null } {
    return this.loop.runNow();
  }

  /**
   * Pauses learning at once: a run in progress is stopped by ending the trainer process (its
   * samples go back to the pool, nothing is written); an idle trainer is left as it is.
   * Resume starts a trainer again, from the served checkpoint, when there is work.
   */
  pause(): void {
    this.st.paused = true;
    const w = this.trainer.worker;
    if (this.loop.busy && w) {
      this.trainer.pausedKill = true;
      w.kill("SIGKILL");
    }
    if (!this.loop.busy && this.st.state !== "restarting" && this.st.state !== "error") this.setPhase("paused");
    else this.publishStatus();
  }

  resume(): void {
    this.st.paused = false;
    if (this.trainer.restartTimer === null && this.st.state === "paused") this.setPhase(this.trainer.worker && !this.trainer.workerReady ? "starting" : "idle");
    else this.publishStatus();
    this.loop.kick();
  }

  /** Waits until no run is in progress (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.loop.busy) await this.lock;
  }

  /** The watch found the served checkpoint clearly worse than its parent: roll back (watchRevert.ts). */
  revert(target: WatchTarget, finding: WatchFinding): Promise<void> {
    return this.exclusive(() => revertServed(this, target, finding));
  }

  /**
   * Rollback / roll-forward: serve checkpoint n and continue training from it. A damaged
   * checkpoint is refused before anything changes (ActivationError with its HTTP status).
   */
  activate(n: number): Promise<{ checkpoint: CheckpointEntry; swap: SwapResult }> {
    return this.exclusive(async () => {
      const entry = this.o.checkpoints.get(n);
      if (!entry) throw new ActivationError(`no checkpoint ${n}`, 404);
      if (entry.verdict === "rejected")
        throw new ActivationError(`checkpoint ${n} was rejected by the publish gate (${entry.gate.reasons.join("; ")}); it is kept for inspection only`, 409);
      // An adapter fits only the model it was trained on: say which, before llama.cpp refuses its shapes.
      if (!trainedOn(entry, this.o.modelPath))
        throw new ActivationError(
          `checkpoint ${n} was trained on ${entry.model}, and ${modelFileOf(this.o.modelPath)} is served: switch to ${entry.model} first (Models, or the chat header's model picker)`,
          409,
        );
      try {
        this.o.checkpoints.verifyFiles(n);
      } catch (e) {
        if (e instanceof CheckpointError) throw new ActivationError(e.message, e.status);
        throw e;
      }
      const w = this.trainer.running;
      if (w) {
        const v = await w.request({ type: "verify", dir: entry.dir }).catch((e: Error) => ({ ok: false, error: e.message }));
        if (!v.ok) throw new ActivationError(`checkpoint ${n} cannot be read: ${v.error}`, 422);
      }
      let swap: SwapResult;
      try {
        swap = await this.serving.swapTo(entry);
      } catch (e) {
        // A file the app's own checks refuse is the checkpoint's fault (422), not the server's.
        throw new ActivationError(`cannot serve checkpoint ${n}: ${(e as Error).message.split("\n")[0]}`, e instanceof GgufError ? 422 : 500);
      }
      await this.trainOnFromChoice(entry.dir, n, `checkpoint ${n}`);
      return { checkpoint: this.o.checkpoints.get(n)!, swap };
    });
  }

  /**
   * After the user chose what to serve (a checkpoint, or `null`: the base model): a full step
   * again (an 'activated' event in the lr policy), no watch (a rolled-back checkpoint may be
   * served again by hand), and training goes on from it (a trainer that is starting reads the
   * active checkpoint itself).
   */
  private async trainOnFromChoice(dir: string | null, checkpoint: number | null, what: string): Promise<void> {
    this.st.lrScale = this.lr.record("activated", checkpoint);
    this.serving.disarmWatch();
    await this.trainer.trainOnFrom(dir, what);
  }

  /**
   * Serves the base model with no adapter (the first row of every rollback) and trains on from a
   * fresh adapter. Not watched, like any choice made by hand.
   */
  activateBase(): Promise<{ swap: SwapResult }> {
    return this.exclusive(async () => {
      let swap: SwapResult;
      try {
        swap = await this.serving.swapToBase();
      } catch (e) {
        throw new ActivationError(`cannot serve the base model: ${(e as Error).message.split("\n")[0]}`, 500);
      }
      await this.trainOnFromChoice(null, null, "a fresh adapter");
      this.publishStatus();
      return { swap };
    });
  }

  /** Imports an adapter trained elsewhere as a candidate for the publish gate (importCheckpoint.ts). */
  importCandidate(source: string): Promise<ImportResult> {
    return this.exclusive(() => importCandidate(this, source));
  }

  pin(n: number, pinned: boolean): CheckpointEntry {
    return this.o.checkpoints.update(n, { pinned });
  }

  /** Kills the trainer in a test (the fault test); the supervisor restarts it. */
  killTrainer(signal: NodeJS.Signals = "SIGKILL"): void {
    this.trainer.worker?.kill(signal);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.memoryTimer) clearInterval(this.memoryTimer);
    // No new checks; one in progress finishes after the trainer is gone (a rollback it started still swaps).
    this.watch?.disarm();
    this.offPool();
    this.offSettings();
    await this.trainer.stop();
    await this.watch?.close();
  }
}
