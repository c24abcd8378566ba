import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { SamplePool } from "./pool.js";
import { modelFileOf } from "./checkpoints.js";
import { evaluateCandidate, gateOf, prepareFluency } from "./publishGate.js";
import type { SupervisorContext } from "./supervisorTypes.js";
import { stepsPerRunOf } from "./stepsPolicy.js";
import { runBatchSize, runLearningRate } from "./trainOptions.js";
import { hostAvailableBytes } from "../../../models/plan/available.js";
import { WorkerExitError, type WorkerClient } from "./workerClient.js";

type Batch = ReturnType<SamplePool["ready"]>;

/** Samples per `prepare` the run loop sends the warm trainer: a run that comes due waits for at most these. */
const SCORE_AHEAD_SAMPLES = 2;

/**
 * The learning loop: when a batch is ready (or "Train now" asks), a run: train → evaluate →
 * gate → checkpoint → hot-swap, one at a time under the supervisor's lock.
 */
export class RunLoop {
  /** a run is in progress */
  busy = false;
  private runRequested = false;
  /** a run failed for a reason other than a crash: wait for new samples before retrying */
  private blocked = false;
  /** a `prepare` is with the trainer (scoreAhead) */
  private preparing = false;
  /** sample ids the warm trainer has scored ahead (or was asked to), so each goes once */
  private readonly preparedIds = new Set<string>();
  private preparedBy: WorkerClient | null = null;

  constructor(private readonly ctx: SupervisorContext) {
    // The trainer's work (its start and load, the anchor pass ahead, a run) comes before the
    // probe's base answers ahead, which only the gate's last phase needs (fluencyProbe.ts).
    ctx.o.probe?.holdAheadWhile?.(() => this.trainerWorking());
  }

  /** The trainer is starting, scoring samples ahead, or in a run. */
  trainerWorking(): boolean {
    const { trainer } = this.ctx;
    return this.busy || this.preparing || (trainer.worker !== null && trainer.running === null);
  }

  /** New samples: a run that failed may be tried again. */
  unblock(): void {
    this.blocked = false;
  }

  refreshWaiting(): void {
    try {
      this.ctx.st.samplesWaiting = this.ctx.o.pool.ready().length;
    } catch (e) {
      this.ctx.st.lastError = `sample pool: ${(e as Error).message}`;
    }
  }

  /**
   * "Train now": a run on whatever is ready, even less than a batch. With a run in progress and
   * nothing else ready (it took the samples), there is nothing to start: `running` says so.
   */
  runNow(): { started: boolean; running: boolean; samplesWaiting: number; reason: string | null } {
    const { st, trainer } = this.ctx;
    this.refreshWaiting();
    const running = this.busy;
    if (st.samplesWaiting === 0 && running) return { started: false, running, samplesWaiting: 0, reason: "a training run is already in progress" };
    if (st.samplesWaiting === 0) return { started: false, running, samplesWaiting: 0, reason: "no samples are ready (give feedback on some answers first)" };
    if (st.paused) return { started: false, running, samplesWaiting: st.samplesWaiting, reason: "training is paused" };
    this.runRequested = true;
    this.blocked = false;
    // The trainer refused this model (memory): asked again, it plans again (memory may have been freed).
    if (st.state === "error" && trainer.worker === null && trainer.restartTimer === null) this.ctx.setPhase("idle");
    this.kick();
    return { started: true, running: this.busy, samplesWaiting: st.samplesWaiting, reason: null };
  }

  /** Starts a run when one is due and nothing is in the way (a trainer first, when none runs). */
  kick(): void {
    const { ctx } = this;
    const { st, o, trainer } = ctx;
    if (this.busy || ctx.stopping || st.paused || this.blocked) return;
    if (st.state !== "idle") return;
    const ready = o.pool.ready();
    st.samplesWaiting = ready.length;
    // Samples are coming: the gate's fluency probe samples the base model's answers ahead (publishGate.ts prepareFluency).
    if (o.startAhead !== false && ready.length >= Math.max(1, o.startAhead ?? 1) && !this.memoryShort()) prepareFluency(ctx);
    const batchSize = o.store.settings.batchSize;
    const auto = o.store.settings.autoLearn && ready.length >= batchSize;
    if (!auto && !(this.runRequested && ready.length > 0)) {
      // Nothing to run yet: start the trainer ahead when samples are coming and memory allows,
      // or give an idle one's memory back when the machine is short.
      const why = this.memoryShort();
      if (why && trainer.running) trainer.stopIdle(why);
      else if (!why && !trainer.worker && trainer.restartTimer === null && o.startAhead !== false && ready.length >= Math.max(1, o.startAhead ?? 1))
        trainer.spawn();
      else if (!why && o.startAhead !== false) this.scoreAhead(ready);
      return;
    }
    if (!trainer.worker) {
      trainer.spawn(); // kicks again once it is ready
      return;
    }
    this.runRequested = false;
    this.busy = true;
    const run = ctx.exclusive(() => this.runOnce(ready.slice(0, batchSize)));
    void run.finally(() => {
      this.busy = false;
      this.refreshWaiting();
      if (trainer.worker && st.state !== "restarting" && st.state !== "error") ctx.setPhase(st.paused ? "paused" : "idle");
      this.kick();
    });
  }

  /**
   * The warm trainer scores waiting samples ahead of their run (the KL anchor's base pass,
   * trainer/worker.ts `prepare`), a few at a time: a run that comes due waits at most for those
   * few, and the first step of the run then skips that pass.
   */
  private scoreAhead(ready: Batch): void {
    const { o, trainer } = this.ctx;
    const w = trainer.running;
    const klBeta = o.store.settings.klBeta;
    if (!w || this.preparing || !(klBeta > 0)) return;
    // A new trainer process starts with an empty cache.
    if (this.preparedBy !== w) {
      this.preparedBy = w;
      this.preparedIds.clear();
    }
    const todo = ready.filter((b) => !this.preparedIds.has(b.id)).slice(0, SCORE_AHEAD_SAMPLES);
    if (todo.length === 0) return;
    for (const b of todo) this.preparedIds.add(b.id);
    // Ids of samples long since trained on are not needed: keep the set bounded.
    if (this.preparedIds.size > 4096) for (const id of [...this.preparedIds].slice(0, 2048)) this.preparedIds.delete(id);
    this.preparing = true;
    w.request({ type: "prepare", samples: todo.map((b) => b.sample), klBeta })
      .catch((e: unknown) => {
        // Ahead work is an optimisation: the run scores what is missing. Say why, and go on.
        if (!(e instanceof WorkerExitError)) console.warn(`scoring samples ahead failed: ${(e as Error).message}`);
      })
      .finally(() => {
        this.preparing = false;
        this.kick();
      });
  }

  /** Why the machine is short of memory for an idle trainer (a reason), or null. */
  private memoryShort(): string | null {
    const { o, st } = this.ctx;
    const available = (o.availableBytes ?? hostAvailableBytes)();
    const low = o.lowMemoryBytes ?? 512 * 2 ** 20;
    if (available < low) return `${(available / 2 ** 20).toFixed(0)} MiB of memory available, under ${(low / 2 ** 20).toFixed(0)} MiB`;
    // Not running yet: would its plan fit what is there now? (Known once a trainer has started.)
    const need = st.memory?.fits ? st.memory.needHostBytes : 0;
    if (!this.ctx.trainer.worker && need > available)
      return `the trainer's plan needs ${(need / 2 ** 20).toFixed(0)} MiB, ${(available / 2 ** 20).toFixed(0)} MiB available`;
    return null;
  }

  private async runOnce(batch: Batch): Promise<void> {
    const { o, st, trainer } = this.ctx;
    const w = trainer.worker;
    if (!w) return;
    const runId = `${Date.now().toString(36)}-${crypto.randomBytes(3).toString("hex")}`;
    o.pool.claim(
      batch.map((b) => b.id),
      runId,
    );
    const staging = o.checkpoints.stagingDir(runId);
    const done = { committed: false };
    try {
      const res = await this.train(w, batch, runId, staging);
      await this.publish(w, batch, runId, staging, res, done);
      // A run that went through clears the fault an earlier one left (a killed trainer, say).
      st.lastError = null;
      await trainer.measure(w);
    } catch (e) {
      const committed = done.committed;
      if (!committed) {
        fs.rmSync(staging, { recursive: true, force: true });
        o.pool.release(runId);
      }
      if (!(e instanceof WorkerExitError)) {
        st.lastError = `training run failed: ${(e as Error).message}`;
        // Retrying the same samples would fail the same way: wait for something new.
        this.blocked = !committed;
        console.warn(st.lastError);
      }
    }
  }

  /** The train phase: the trainer runs the batch's steps at the policy's rate, into the staging directory. */
  private train(w: WorkerClient, batch: Batch, runId: string, staging: string): Promise<{ loss: number; totalSteps: number }> {
    const { ctx } = this;
    const { o, st } = ctx;
    // A fixed count when the options give one; else as many as the gate's recent verdicts allow (stepsPolicy.ts).
    const steps = o.stepsPerRun ?? stepsPerRunOf(o.store.state.training.lrEvents ?? [], (n) => o.checkpoints.get(n)?.gate);
    st.runId = runId;
    st.step = 0;
    st.steps = steps;
    ctx.setPhase("training");
    const lr = runLearningRate(o.store.settings, ctx.lr.scale);
    // The mean step time, for the time left (the run's set-up, tokenizing and the teacher's log-probs, counts in it).
    const runStart = performance.now();
    const progress = ctx.track("steps");
    const samples = batch.map((b) => b.sample);
    return w.request(
      { type: "train", runId, samples, steps, lr, batchSize: runBatchSize(batch.length, o.store.settings), outDir: staging, klBeta: o.store.settings.klBeta },
      (m) => {
        if (m.type === "work") return progress(m.done / m.total);
        st.stepSeconds = (performance.now() - runStart) / Math.max(1, m.step) / 1000;
        st.step = m.step;
        st.steps = m.steps;
        st.loss = m.loss;
        progress(m.step / m.steps);
      },
    );
  }

  /**
   * Evaluate, gate, commit the checkpoint (published or kept for inspection), then serve it or
   * train on from what is served at a smaller step. `done.committed` once the checkpoint holds the samples.
   */
  private async publish(
    w: WorkerClient,
    batch: Batch,
    runId: string,
    staging: string,
    res: { loss: number; totalSteps: number },
    done: { committed: boolean },
  ): Promise<void> {
    const { ctx } = this;
    const { o, st } = ctx;
    ctx.setPhase("evaluating");
    const servingDir = ctx.activeDir();
    const serving = o.store.state.training.activeCheckpoint;
    const ev = await evaluateCandidate(ctx, w, runId);
    const gate = await gateOf(ctx, ev, path.join(staging, "adapter.gguf"));
    ctx.setPhase("publishing");
    const rewards = batch.map((b) => b.reward).filter((r): r is number => r !== null);
    const entry = await o.checkpoints.commit(staging, {
      verdict: gate.verdict,
      runId,
      sampleIds: batch.map((b) => b.id),
      meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
      loss: res.loss,
      kl: ev.kl,
      gate,
      totalSteps: res.totalSteps,
      parent: serving,
      model: modelFileOf(o.modelPath),
    });
    // The samples are in a checkpoint now (published or kept for inspection): used.
    o.pool.commit(runId);
    done.committed = true;
    ctx.trainer.resetBackoff();
    o.bus.emit("checkpoint", { checkpoint: { ...entry } });
    if (gate.verdict === "published") {
      await ctx.serving.swapTo(entry);
      ctx.serving.armWatch(entry);
      st.lrScale = ctx.lr.record("published", entry.id);
    } else {
      // Keep serving what we had; train on from it with a smaller step.
      st.lrScale = ctx.lr.record("rejected", entry.id);
      await w.request({ type: "load", dir: servingDir });
    }
  }
}
