import type { PhaseProgressView, TrainingPhase, TrainingStatusView } from "../api/training.js";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { EventBus } from "../rollout/events.js";
import { rewardOf, type Store } from "../store/store.js";
import type { SwapResult } from "../inference/adapterGate.js";
import type { Evaluation, MemoryPlanSummary, ScoredSequence, TrainSettings } from "../../../trainer/protocol.js";
import { halvedLrScale, runBatchSize, runLearningRate, trainSettingsOf } from "./trainOptions.js";
import { CheckpointError, Checkpoints, modelFileOf, trainedOn, type CheckpointEntry, type RevertInfo } from "./checkpoints.js";
import { assertFiniteWeights, firstNonFiniteTensor } from "../../../models/gguf/finiteWeights.js";
import { GgufError } from "../../../models/gguf/types.js";
import { GATE_DEFAULTS, gateVerdict, type FluencyCheck, type GateOptions, type GateResult } from "./gate.js";
import { isHeldBack } from "../rollout/heldBack.js";
import type { FluencyMeasure, ProbePrompt } from "../inference/fluencyProbe.js";
import { ServeWatch, type WatchFinding, type WatchRule, type WatchStatus, type WatchTarget } from "./serveWatch.js";
import type { SamplePool } from "./pool.js";
import { AdapterMismatchError, stageImport, type ImportSummary } from "../adapters/importAdapter.js";
import { WorkerClient, WorkerError, WorkerExitError, type WorkerSpawnOptions } from "./workerClient.js";

/** What the supervisor needs from the inference engine. */
export interface AdapterTarget {
  swapAdapter(adapterPath: string | null, version: string): Promise<SwapResult>;
}

export interface SupervisorOptions {
  store: Store;
  bus: EventBus;
  pool: SamplePool;
  checkpoints: Checkpoints;
  engine: AdapterTarget;
  modelPath: string;
  /** optimizer steps per batch (default 4) */
  stepsPerRun?: number;
  gate?: Partial<GateOptions>;
  /** recent main turns the gate measures KL on; liked/disliked answers compared, each (default 8) */
  evalTurns?: number;
  /** first restart delay after a trainer crash; doubles up to 30 s (default 1 s) */
  restartBackoffMs?: number;
  /** smallest learning-rate scale after repeated rejections (default 1/64: trainOptions.ts MIN_LR_SCALE) */
  minLrScale?: number;
  worker?: WorkerSpawnOptions;
  /**
   * Samples a candidate's own answers with llama.cpp and scores them with the base model, for
   * the gate's fluency check and the watch's (fluencyProbe.ts). Without one, fluency is not
   * checked (the KL checks still are).
   */
  probe?: FluencyMeasure | null;
  /** how many prompts the fluency check samples (recent and held-back, half each at most; default 8) and answers per prompt (default 4) */
  probePrompts?: number;
  probeSamples?: number;
  /** longest answer the fluency check samples (default 64 tokens, or less when the turn was served with less) */
  probeMaxTokens?: number;
  /** the rule for "clearly worse than its parent" (serveWatch.ts); false: no watch */
  watch?: Partial<WatchRule> | false;
}

export type { TrainingPhase };

/**
 * The learning loop's live status: the contract's TrainingStatusView (one declaration), with the
 * core's own types for the parts the contract re-states for the UI.
 */
export interface TrainingLiveStatus extends Omit<TrainingStatusView, "memory" | "watch" | "lastRevert"> {
  /** The trainer's memory plan for the served model: where the weights live, or why it cannot train. */
  memory: MemoryPlanSummary | null;
  /** the checkpoint the watch measures against its parent, with the latest figures; null when none */
  watch: WatchStatus | null;
  /** the latest rollback by the watch (also kept on the checkpoint) */
  lastRevert: (RevertInfo & { checkpoint: number }) | null;
}

/** Why an activation failed, with the HTTP status the API should answer. */
export class ActivationError extends CheckpointError {}

/** What importCandidate did: the checkpoint it made (published and served, or rejected and kept), what it read. */
export interface ImportResult {
  checkpoint: CheckpointEntry;
  imported: ImportSummary;
  /** the swap that put it in service; null when the gate rejected it */
  swap: SwapResult | null;
}

/**
 * Runs the trainer process and the learning loop: batches from the pool → train → evaluate →
 * gate → checkpoint → hot-swap. The trainer is a separate, lower-priority process: serving never
 * waits for it. If it dies, the run's samples go back to the pool, the staging directory is
 * removed, and a new trainer starts (with back-off) from the checkpoint being served.
 */
export class TrainingSupervisor {
  private worker: WorkerClient | null = null;
  private ready: Promise<void> | null = null;
  private workerReady = false;
  /** the trainer was stopped by pause(), not by a crash: no restart */
  private pausedKill = false;
  private stopping = false;
  private busy = false;
  /** serialises runs and activations */
  private lock: Promise<unknown> = Promise.resolve();
  private runRequested = false;
  /** a run failed for a reason other than a crash: wait for new samples before retrying */
  private blocked = false;
  private backoffMs: number;
  private restartTimer: NodeJS.Timeout | null = null;
  private offPool: () => void;
  private offSettings: () => void;
  private readonly st: TrainingLiveStatus;
  private readonly watch: ServeWatch | null;

  constructor(private readonly o: SupervisorOptions) {
    this.backoffMs = o.restartBackoffMs ?? 1000;
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
    this.watch =
      o.watch === false
        ? null
        : new ServeWatch({ store: o.store, bus: o.bus, probe: o.probe, rule: o.watch, onRegression: (t, f) => this.revert(t, f) });
    this.offPool = o.pool.onChange(() => {
      this.blocked = false;
      this.refreshWaiting();
      this.kick();
    });
    this.offSettings = o.bus.on("settings", () => {
      this.st.batchSize = o.store.settings.batchSize;
      this.publishStatus();
      this.kick();
    });
  }

  /**
   * Starts supervising. The trainer process itself starts when there is first something to
   * train (it loads tfjs and the model: no cost for an app that never gets feedback).
   */
  start(): void {
    const n = this.o.checkpoints.cleanStaging();
    if (n > 0) console.warn(`removed ${n} unfinished checkpoint${n > 1 ? "s" : ""} left by a trainer that stopped mid-write`);
    this.o.checkpoints.recoverOrphans();
    this.settleUsedSamples();
    // The watch on a checkpoint the loop put into service goes on after a restart.
    const w = this.o.store.state.training.watch as WatchTarget | null | undefined;
    if (w && this.watch && w.checkpoint === this.o.store.state.training.activeCheckpoint) this.watch.arm(w);
    const last = this.o.checkpoints.list().filter((c) => c.reverted).at(-1);
    if (last?.reverted) this.st.lastRevert = { ...last.reverted, checkpoint: last.id };
    this.refreshWaiting();
    this.setPhase(this.st.paused ? "paused" : "idle");
    this.kick();
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
    return this.worker?.pid ?? null;
  }

  private settings(): TrainSettings {
    return trainSettingsOf(this.o.store.settings);
  }

  private activeDir(): string | null {
    const n = this.o.store.state.training.activeCheckpoint;
    if (n === null) return null;
    return this.o.checkpoints.get(n)?.dir ?? null;
  }

  private spawn(): void {
    if (this.stopping) return;
    const w = new WorkerClient(this.o.worker);
    this.worker = w;
    this.workerReady = false;
    this.st.trainerPid = w.pid ?? null;
    this.st.trainerMemory = null; // a new process: the old one's figures no longer hold
    this.setPhase(this.st.paused ? "paused" : "starting");
    void w.exit.then((e) => this.onExit(w, e));
    const initDir = this.activeDir();
    this.ready = w
      .request({ type: "init", modelPath: this.o.modelPath, settings: this.settings(), resumeDir: initDir })
      .then(async (r) => {
        // A checkpoint activated while the trainer was starting: train on from that one.
        const now = this.activeDir();
        if (now !== initDir) await w.request({ type: "load", dir: now });
        this.st.backend = r.backend;
        this.st.device = r.device;
        this.st.memory = r.plan;
        await this.measureTrainer(w);
        this.workerReady = w === this.worker;
        this.setPhase(this.st.paused ? "paused" : "idle");
        this.kick();
      });
    this.ready.catch((e: Error) => {
      if (e instanceof WorkerExitError) return; // onExit restarts it
      if (e instanceof WorkerError && e.plan) {
        // Not a crash to retry: this model does not fit this machine. Serving goes on; the
        // trainer is let go without a restart (onExit would restart it): "Train now" plans again.
        this.st.memory = e.plan;
        // The refusal carries no backend field; its plan's summary names the one it planned for.
        this.st.backend ??= e.plan.backend;
        this.st.lastError = `learning is off for this model: ${e.message}`;
        if (this.worker === w) {
          this.worker = null;
          this.st.trainerPid = null;
        }
      } else {
        this.st.lastError = `trainer could not start: ${e.message}`;
      }
      this.setPhase("error");
      w.kill();
    });
  }

  private onExit(w: WorkerClient, e: WorkerExitError): void {
    if (this.worker !== w) return;
    this.worker = null;
    this.st.trainerPid = null;
    if (this.stopping) return;
    if (this.pausedKill) {
      this.pausedKill = false;
      // Resumed before the stopped trainer was gone: carry on (kick starts a new trainer).
      this.setPhase(this.st.paused ? "paused" : "idle");
      if (!this.st.paused) this.kick();
      return;
    }
    this.st.restarts++;
    this.st.lastError = `${e.message}; restarting in ${(this.backoffMs / 1000).toFixed(1)} s`;
    this.setPhase("restarting");
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.spawn();
    }, this.backoffMs);
    this.restartTimer.unref?.();
    this.backoffMs = Math.min(this.backoffMs * 2, 30_000);
  }

  private setPhase(p: TrainingPhase): void {
    this.st.state = p;
    this.st.progress = null;
    if (p !== "training" && p !== "evaluating" && p !== "publishing") {
      this.st.step = null;
      this.st.steps = null;
      this.st.runId = null;
    }
    this.publishStatus();
  }

  private refreshWaiting(): void {
    try {
      this.st.samplesWaiting = this.o.pool.ready().length;
    } catch (e) {
      this.st.lastError = `sample pool: ${(e as Error).message}`;
    }
  }

  /**
   * Starts reporting a part of a run (status.progress): returns the function that takes its
   * fraction done, with the time left at the rate so far.
   */
  private track(part: PhaseProgressView["part"]): (fraction: number) => void {
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

  /** The gate's figures from the trainer for the candidate it holds, against the adapter served now. */
  private evaluateCandidate(w: WorkerClient, runId: string): Promise<Evaluation> {
    const serving = this.o.store.state.training.activeCheckpoint;
    const progress = this.track("scores");
    return w.request({ type: "evaluate", runId, servingAdapter: serving === null ? null : (this.o.checkpoints.get(serving)?.path ?? null), ...this.evalSets() }, (m) => {
      if (m.type === "work") progress(m.done / m.total);
    });
  }

  private publishStatus(): void {
    this.o.bus.emit("training", { training: { ...this.status() } });
  }

  /**
   * "Train now": a run on whatever is ready, even less than a batch. With a run in progress and
   * nothing else ready (it took the samples), there is nothing to start: `running` says so.
   */
  runNow(): { started: boolean; running: boolean; samplesWaiting: number; reason: string | null } {
    this.refreshWaiting();
    const running = this.busy;
    if (this.st.samplesWaiting === 0 && running) return { started: false, running, samplesWaiting: 0, reason: "a training run is already in progress" };
    if (this.st.samplesWaiting === 0) return { started: false, running, samplesWaiting: 0, reason: "no samples are ready (give feedback on some answers first)" };
    if (this.st.paused) return { started: false, running, samplesWaiting: this.st.samplesWaiting, reason: "training is paused" };
    this.runRequested = true;
    this.blocked = false;
    // The trainer refused this model (memory): asked again, it plans again (memory may have been freed).
    if (this.st.state === "error" && this.worker === null && this.restartTimer === null) this.setPhase("idle");
    this.kick();
    return { started: true, running: this.busy, samplesWaiting: this.st.samplesWaiting, reason: null };
  }

  /**
   * Pauses learning at once: a run in progress is stopped by ending the trainer process (its
   * samples go back to the pool, nothing is written); an idle trainer is left as it is.
   * Resume starts a trainer again, from the served checkpoint, when there is work.
   */
  pause(): void {
    this.st.paused = true;
    if (this.busy && this.worker) {
      this.pausedKill = true;
      this.worker.kill("SIGKILL");
    }
    if (!this.busy && this.st.state !== "restarting" && this.st.state !== "error") this.setPhase("paused");
    else this.publishStatus();
  }

  resume(): void {
    this.st.paused = false;
    if (this.restartTimer === null && this.st.state === "paused") this.setPhase(this.worker && !this.workerReady ? "starting" : "idle");
    else this.publishStatus();
    this.kick();
  }

  /** Waits until no run is in progress (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.busy) await this.lock;
  }

  private kick(): void {
    if (this.busy || this.stopping || this.st.paused || this.blocked) return;
    if (this.st.state !== "idle") return;
    const ready = this.o.pool.ready();
    this.st.samplesWaiting = ready.length;
    const batchSize = this.o.store.settings.batchSize;
    const auto = this.o.store.settings.autoLearn && ready.length >= batchSize;
    if (!auto && !(this.runRequested && ready.length > 0)) return;
    if (!this.worker) {
      this.spawn(); // kicks again once it is ready
      return;
    }
    this.runRequested = false;
    this.busy = true;
    const run = this.lock.then(() => this.runOnce(ready.slice(0, batchSize)));
    this.lock = run.catch(() => undefined);
    void run.finally(() => {
      this.busy = false;
      this.refreshWaiting();
      if (this.worker && this.st.state !== "restarting" && this.st.state !== "error") this.setPhase(this.st.paused ? "paused" : "idle");
      this.kick();
    });
  }

  private async runOnce(batch: ReturnType<SamplePool["ready"]>): Promise<void> {
    const w = this.worker;
    if (!w) return;
    const runId = `${Date.now().toString(36)}-${crypto.randomBytes(3).toString("hex")}`;
    const ids = batch.map((b) => b.id);
    this.o.pool.claim(ids, runId);
    const staging = this.o.checkpoints.stagingDir(runId);
    const steps = this.o.stepsPerRun ?? 4;
    let committed = false;
    try {
      this.st.runId = runId;
      this.st.step = 0;
      this.st.steps = steps;
      this.setPhase("training");
      const lr = runLearningRate(this.o.store.settings, this.st.lrScale);
      // The mean step time, for the time left (the run's set-up, tokenizing and the teacher's log-probs, counts in it).
      const runStart = performance.now();
      const progress = this.track("steps");
      const res = await w.request(
        { type: "train", runId, samples: batch.map((b) => b.sample), steps, lr, batchSize: runBatchSize(batch.length, this.o.store.settings), outDir: staging, klBeta: this.o.store.settings.klBeta },
        (m) => {
          if (m.type === "work") return progress(m.done / m.total);
          this.st.stepSeconds = (performance.now() - runStart) / Math.max(1, m.step) / 1000;
          this.st.step = m.step;
          this.st.steps = m.steps;
          this.st.loss = m.loss;
          progress(m.step / m.steps);
        },
      );
      this.setPhase("evaluating");
      const servingDir = this.activeDir();
      const serving = this.o.store.state.training.activeCheckpoint;
      const ev = await this.evaluateCandidate(w, runId);
      const gate = await this.gateOf(ev, path.join(staging, "adapter.gguf"));
      this.setPhase("publishing");
      const rewards = batch.map((b) => b.reward).filter((r): r is number => r !== null);
      const entry = this.o.checkpoints.commit(staging, {
        verdict: gate.verdict,
        runId,
        sampleIds: ids,
        meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
        loss: res.loss,
        kl: ev.kl,
        gate,
        totalSteps: res.totalSteps,
        parent: serving,
        model: modelFileOf(this.o.modelPath),
      });
      // The samples are in a checkpoint now (published or kept for inspection): used.
      this.o.pool.commit(runId);
      committed = true;
      this.backoffMs = this.o.restartBackoffMs ?? 1000;
      this.o.bus.emit("checkpoint", { checkpoint: { ...entry } });
      if (gate.verdict === "published") {
        await this.swapTo(entry);
        this.armWatch(entry);
        this.st.lrScale = 1;
      } else {
        // Keep serving what we had; train on from it with a smaller step.
        this.st.lrScale = halvedLrScale(this.st.lrScale, this.o.minLrScale);
        await w.request({ type: "load", dir: servingDir });
      }
      // A run that went through clears the fault an earlier one left (a killed trainer, say).
      this.st.lastError = null;
      await this.measureTrainer(w);
    } catch (e) {
      if (!committed) {
        fs.rmSync(staging, { recursive: true, force: true });
        this.o.pool.release(runId);
      }
      if (!(e instanceof WorkerExitError)) {
        this.st.lastError = `training run failed: ${(e as Error).message}`;
        // Retrying the same samples would fail the same way: wait for something new.
        this.blocked = !committed;
        console.warn(this.st.lastError);
      }
    }
  }

  /** What the trainer holds, once loaded and after each run, for the status (a failed measure is not a failed run). */
  private async measureTrainer(w: WorkerClient): Promise<void> {
    try {
      const m = await w.request({ type: "memory" });
      this.st.trainerMemory = { rssBytes: m.rssBytes, tensorBytes: m.tensorBytes, wasmHeapBytes: m.wasmHeapBytes, at: new Date().toISOString() };
    } catch {
      // The trainer went away or predates the command: the last figures stay, with their time.
    }
  }

  /**
   * Recent main turns (KL to the serving adapter and to the base), liked and disliked answers,
   * and the held-back turns with a verdict (KL to the base), newest last, as token sequences.
   */
  private evalSets(): { prompts: ScoredSequence[]; liked: ScoredSequence[]; disliked: ScoredSequence[]; heldBack: ScoredSequence[] } {
    const n = this.o.evalTurns ?? 8;
    const { recent, liked, disliked, heldBack } = this.turnSets();
    const seqs = (ids: string[]) =>
      ids.slice(-n).flatMap((id) => {
        const t = this.o.store.readTurn(id);
        if (t.promptTokens.length === 0 || t.responseTokens.length === 0) return [];
        return [{ tokens: [...t.promptTokens, ...t.responseTokens], start: t.promptTokens.length }];
      });
    return { prompts: seqs(recent), liked: seqs(liked), disliked: seqs(disliked), heldBack: seqs(heldBack) };
  }

  /** Turn ids, oldest first: recent main turns, liked and disliked ones, held-back ones with a verdict. */
  private turnSets(): { recent: string[]; liked: string[]; disliked: string[]; heldBack: string[] } {
    const share = this.o.store.settings.heldBackShare;
    const recent: string[] = [];
    const liked: string[] = [];
    const disliked: string[] = [];
    const heldBack: string[] = [];
    for (const e of this.o.store.turnEntries()) {
      if (e.type !== "main") continue;
      recent.push(e.turnId);
      const r = rewardOf(e).reward;
      if (r === 1) liked.push(e.turnId);
      else if (r === -1) disliked.push(e.turnId);
      if ((r !== null || e.feedback?.hint) && isHeldBack(e, share)) heldBack.push(e.turnId);
    }
    return { recent, liked, disliked, heldBack };
  }

  /**
   * The publish gate's verdict on a candidate (gate.ts): the trainer's figures, then, for one
   * those let through, the fluency of its own answers (it costs sampling, so only then).
   */
  private async gateOf(ev: Evaluation, adapterPath: string): Promise<GateResult> {
    const opts = { ...GATE_DEFAULTS, ...this.o.gate };
    const gate = { ...gateVerdict(ev, opts), evaluationSeconds: ev.seconds };
    // A candidate with NaN or infinite weights would answer with nothing, whatever its figures say.
    const nonFinite = firstNonFiniteTensor(adapterPath);
    if (nonFinite !== null) return { ...gate, verdict: "rejected", reasons: [...gate.reasons, `tensor '${nonFinite}' holds NaN or infinite weights`] };
    if (gate.verdict !== "published" || !this.o.probe) return gate;
    const fluency = await this.measureFluency(this.o.probe, adapterPath);
    const full = { ...gateVerdict(ev, opts, fluency.check), evaluationSeconds: ev.seconds };
    return fluency.error ? { ...full, verdict: "rejected", reasons: [...full.reasons, fluency.error] } : full;
  }

  /**
   * The gate's fluency figures for a candidate: its own answers to a few recent and held-back
   * prompts (at the settings they were served with, fixed seeds), scored by the base model, vs
   * the base model's own answers. A candidate llama.cpp cannot run is rejected with the reason.
   */
  private async measureFluency(probe: FluencyMeasure, adapterPath: string): Promise<{ check: FluencyCheck | null; error?: string }> {
    const prompts = this.probePrompts();
    if (prompts.length === 0) return { check: null };
    try {
      const c = await probe.compare(adapterPath, prompts, { onProgress: this.track("answers") });
      return { check: { candidate: c.candidate.meanLogprob, base: c.base.meanLogprob, answers: c.candidate.answers, tokens: c.candidate.tokens, seconds: c.seconds } };
    } catch (e) {
      if (this.stopping) throw e;
      return { check: null, error: `its answers could not be sampled with llama.cpp: ${(e as Error).message.split("\n")[0]}` };
    }
  }

  /** Distinct prompts of the newest held-back turns and newest main turns (half each at most), with their served settings. */
  private probePrompts(): ProbePrompt[] {
    const total = this.o.probePrompts ?? 8;
    const samples = this.o.probeSamples ?? 4;
    const cap = this.o.probeMaxTokens ?? 64;
    const { recent, heldBack } = this.turnSets();
    const seen = new Set<string>();
    const picked: string[] = [];
    const take = (ids: string[], k: number) => {
      for (let i = ids.length - 1; i >= 0 && k > 0; i--) {
        const t = this.o.store.readTurn(ids[i]);
        const key = t.promptTokens.join(",");
        if (t.promptTokens.length === 0 || seen.has(key)) continue;
        seen.add(key);
        picked.push(ids[i]);
        k--;
      }
    };
    take(heldBack, Math.floor(total / 2));
    take(recent, total - picked.length);
    return picked.flatMap((id) => {
      const t = this.o.store.readTurn(id);
      const seed = crypto.createHash("sha256").update(id).digest().readUInt32BE(0) & 0x7fffffff;
      const maxTokens = Math.max(1, Math.min(cap, t.sampling.maxTokens ?? cap));
      return Array.from({ length: samples }, (_, k) => ({ tokens: t.promptTokens, temperature: t.sampling.temperature, topP: t.sampling.topP, maxTokens, seed: (seed + k) % 2 ** 31 }));
    });
  }

  /** Starts the watch on a checkpoint the loop just put into service, against the one it replaced. */
  private armWatch(entry: CheckpointEntry): void {
    if (!this.watch) return;
    const parent = entry.parent;
    const target: WatchTarget = {
      checkpoint: entry.id,
      version: entry.version,
      parent,
      parentVersion: parent === null ? "base" : (this.o.checkpoints.get(parent)?.version ?? `ckpt-${parent}`),
      since: new Date().toISOString(),
    };
    this.watch.arm(target);
    this.o.store.updateState((d) => {
      d.training.watch = target;
    });
  }

  private disarmWatch(): void {
    this.watch?.disarm();
    if (this.o.store.state.training.watch) {
      this.o.store.updateState((d) => {
        d.training.watch = null;
      });
    }
  }

  /**
   * Rolls back by itself: the watch found the served checkpoint clearly worse than its parent.
   * Serves the parent (the base model when there is none, or it is gone or damaged), marks the
   * checkpoint 'reverted' with the reason, trains on from what is served now at half the step,
   * and tells the UI (status, SSE `revert`). The checkpoint, its samples and the turns it
   * answered are kept. A checkpoint trained on from it meanwhile is rolled back with it.
   */
  revert(target: WatchTarget, finding: WatchFinding): Promise<void> {
    const run = this.lock.then(async () => {
      const active = this.o.store.state.training.activeCheckpoint;
      // The bad checkpoint itself, or one trained on from it while the watch decided.
      const chain: number[] = [];
      for (let c = active === null ? undefined : this.o.checkpoints.get(active); c; c = c.parent === null ? undefined : this.o.checkpoints.get(c.parent)) {
        chain.push(c.id);
        if (c.id === target.checkpoint) break;
      }
      if (!chain.includes(target.checkpoint)) return; // already rolled back or moved elsewhere
      let to: CheckpointEntry | null = null;
      let note = "";
      if (target.parent !== null) {
        try {
          to = this.o.checkpoints.verifyFiles(target.parent);
        } catch (e) {
          note = ` (checkpoint ${target.parent} cannot be served: ${(e as Error).message}; the base model is served instead)`;
        }
      }
      const at = new Date().toISOString();
      if (to) await this.swapTo(to);
      else await this.swapToBase();
      this.disarmWatch();
      const info: RevertInfo = { at, reason: finding.reason + note, rule: finding.rule, to: to?.id ?? null, stats: { reward: finding.reward, fluency: finding.fluency } };
      this.o.checkpoints.markReverted(target.checkpoint, info);
      for (const id of chain.filter((x) => x !== target.checkpoint)) {
        this.o.checkpoints.markReverted(id, { at, reason: `trained on from checkpoint ${target.checkpoint}, which was rolled back: ${finding.reason}`, rule: "ancestor", to: to?.id ?? null });
      }
      this.st.lrScale = halvedLrScale(this.st.lrScale, this.o.minLrScale);
      this.st.lastRevert = { ...info, checkpoint: target.checkpoint };
      console.warn(`rolled back checkpoint ${target.checkpoint} to ${to ? `checkpoint ${to.id}` : "the base model"}: ${info.reason}`);
      this.o.bus.emit("revert", { checkpoint: target.checkpoint, to: info.to, version: to?.version ?? "base", reason: info.reason, rule: info.rule, at });
      for (const id of chain) {
        const c = this.o.checkpoints.get(id);
        if (c) this.o.bus.emit("checkpoint", { checkpoint: { ...c } });
      }
      this.publishStatus();
      // Train on from what is served now.
      const w = this.worker;
      if (w && this.workerReady) await w.request({ type: "load", dir: to?.dir ?? null }).catch((e: Error) => (this.st.lastError = `trainer could not load ${to ? `checkpoint ${to.id}` : "a fresh adapter"}: ${e.message}`));
    });
    this.lock = run.catch(() => undefined);
    return run;
  }

  private async swapToBase(): Promise<SwapResult> {
    const r = await this.o.engine.swapAdapter(null, "base");
    this.o.store.updateState((d) => {
      d.training.activeCheckpoint = null;
      d.training.updatedAt = new Date().toISOString();
    });
    this.st.activeCheckpoint = null;
    this.st.lastSwap = { pauseMs: r.pauseMs, version: "base", at: new Date().toISOString() };
    this.o.bus.emit("swap", { version: "base", checkpoint: null, pauseMs: r.pauseMs, drained: r.drained, stragglers: r.stragglers });
    this.o.bus.emit("status", { adapter: "base" });
    return r;
  }

  private async swapTo(entry: CheckpointEntry): Promise<SwapResult> {
    const r = await this.o.engine.swapAdapter(entry.path, entry.version);
    this.o.store.updateState((d) => {
      d.training.activeCheckpoint = entry.id;
      d.training.updatedAt = new Date().toISOString();
    });
    this.o.checkpoints.update(entry.id, { swapPauseMs: r.pauseMs });
    this.st.activeCheckpoint = entry.id;
    this.st.lastSwap = { pauseMs: r.pauseMs, version: entry.version, at: new Date().toISOString() };
    this.o.bus.emit("swap", { version: entry.version, checkpoint: entry.id, pauseMs: r.pauseMs, drained: r.drained, stragglers: r.stragglers });
    this.o.bus.emit("status", { adapter: entry.version });
    this.o.checkpoints.applyRetention();
    return r;
  }

  /**
   * Rollback / roll-forward: serve checkpoint n and continue training from it. A damaged
   * checkpoint is refused before anything changes (ActivationError with its HTTP status).
   */
  activate(n: number): Promise<{ checkpoint: CheckpointEntry; swap: SwapResult }> {
    const run = this.lock.then(async () => {
      const entry = this.o.checkpoints.get(n);
      if (!entry) throw new ActivationError(`no checkpoint ${n}`, 404);
      if (entry.verdict === "rejected") throw new ActivationError(`checkpoint ${n} was rejected by the publish gate (${entry.gate.reasons.join("; ")}); it is kept for inspection only`, 409);
      // An adapter fits only the model it was trained on: say which, before llama.cpp refuses its shapes.
      if (!trainedOn(entry, this.o.modelPath)) throw new ActivationError(`checkpoint ${n} was trained on ${entry.model}, and ${modelFileOf(this.o.modelPath)} is served: switch to ${entry.model} first (Models, or the chat header's model picker)`, 409);
      try {
        this.o.checkpoints.verifyFiles(n);
      } catch (e) {
        if (e instanceof CheckpointError) throw new ActivationError(e.message, e.status);
        throw e;
      }
      const w = this.worker;
      if (w && this.workerReady) {
        const v = await w.request({ type: "verify", dir: entry.dir }).catch((e: Error) => ({ ok: false, error: e.message }));
        if (!v.ok) throw new ActivationError(`checkpoint ${n} cannot be read: ${v.error}`, 422);
      }
      let swap: SwapResult;
      try {
        swap = await this.swapTo(entry);
      } catch (e) {
        // A file the app's own checks refuse is the checkpoint's fault (422), not the server's.
        throw new ActivationError(`cannot serve checkpoint ${n}: ${(e as Error).message.split("\n")[0]}`, e instanceof GgufError ? 422 : 500);
      }
      await this.trainOnFromChoice(entry.dir, `checkpoint ${n}`);
      return { checkpoint: this.o.checkpoints.get(n)!, swap };
    });
    this.lock = run.catch(() => undefined);
    return run;
  }

  /**
   * After the user chose what to serve (a checkpoint, or `null`: the base model): a full step
   * again, no watch (a rolled-back checkpoint may be served again by hand), and training goes on
   * from it (a trainer that is starting reads the active checkpoint itself).
   */
  private async trainOnFromChoice(dir: string | null, what: string): Promise<void> {
    this.st.lrScale = 1;
    this.disarmWatch();
    const w = this.worker;
    if (w && this.workerReady) await w.request({ type: "load", dir }).catch((e: Error) => (this.st.lastError = `trainer could not load ${what}: ${e.message}`));
  }

  /**
   * Serves the base model with no adapter (the first row of every rollback) and trains on from a
   * fresh adapter. Not watched, like any choice made by hand.
   */
  activateBase(): Promise<{ swap: SwapResult }> {
    const run = this.lock.then(async () => {
      let swap: SwapResult;
      try {
        swap = await this.swapToBase();
      } catch (e) {
        throw new ActivationError(`cannot serve the base model: ${(e as Error).message.split("\n")[0]}`, 500);
      }
      await this.trainOnFromChoice(null, "a fresh adapter");
      this.publishStatus();
      return { swap };
    });
    this.lock = run.catch(() => undefined);
    return run;
  }

  /**
   * Imports an adapter trained elsewhere (a PEFT LoRA directory or a llama.cpp LoRA GGUF) as a
   * candidate: checked against the served base and staged in llama.cpp's format
   * (adapters/importAdapter.ts: a mismatch is refused, ActivationError 422, before anything is
   * written), loaded into the trainer, evaluated against the serving adapter and judged by the
   * same gate as a trained candidate, committed as a checkpoint either way, and served only when
   * the gate publishes it; a rejected one is kept for inspection and the trainer goes back to
   * the serving state. Runs under the same lock as runs and activations.
   */
  importCandidate(source: string): Promise<ImportResult> {
    const run = this.lock.then(async () => {
      if (this.st.paused) throw new ActivationError("learning is paused: resume it to import an adapter (the publish gate runs in the trainer)", 409);
      if (this.st.state === "restarting") throw new ActivationError("the trainer is restarting; try the import again in a moment", 503);
      const runId = `import-${Date.now().toString(36)}-${crypto.randomBytes(3).toString("hex")}`;
      const staging = this.o.checkpoints.stagingDir(runId);
      let imported: ImportSummary;
      try {
        imported = stageImport(source, this.o.modelPath, staging);
        assertFiniteWeights(path.join(staging, "adapter.gguf"));
      } catch (e) {
        if (e instanceof AdapterMismatchError || e instanceof GgufError) {
          fs.rmSync(staging, { recursive: true, force: true });
          throw new ActivationError(`cannot import ${source}: ${e instanceof GgufError ? e.message.split(": ").slice(1).join(": ") : e.message}`, 422);
        }
        throw e;
      }
      let committed = false;
      let w: WorkerClient | null = null;
      try {
        // The gate runs in the trainer: start it if it is not running yet.
        if (!this.worker) this.spawn();
        try {
          await this.ready;
        } catch (e) {
          throw new ActivationError(`the trainer could not start, so the adapter cannot be gated: ${(e as Error).message}`, 503);
        }
        w = this.worker;
        if (!w || !this.workerReady) throw new ActivationError(`the trainer is not running, so the adapter cannot be gated${this.st.lastError ? ` (${this.st.lastError})` : ""}`, 503);
        this.setPhase("evaluating");
        await w.request({ type: "load", dir: staging }).catch((e: Error) => {
          throw new ActivationError(`cannot import ${source}: the trainer cannot read the converted adapter: ${e.message}`, 422);
        });
        const serving = this.o.store.state.training.activeCheckpoint;
        const servingDir = this.activeDir();
        const ev = await this.evaluateCandidate(w, runId);
        const gate = await this.gateOf(ev, path.join(staging, "adapter.gguf"));
        this.setPhase("publishing");
        const entry = this.o.checkpoints.commit(staging, { verdict: gate.verdict, runId, sampleIds: [], meanReward: null, loss: 0, kl: ev.kl, gate, totalSteps: 0, parent: serving, model: modelFileOf(this.o.modelPath) });
        committed = true;
        this.o.bus.emit("checkpoint", { checkpoint: { ...entry } });
        let swap: SwapResult | null = null;
        if (gate.verdict === "published") {
          swap = await this.swapTo(entry);
          this.armWatch(entry);
          this.st.lrScale = 1;
        } else {
          await w.request({ type: "load", dir: servingDir });
        }
        return { checkpoint: this.o.checkpoints.get(entry.id) ?? entry, imported, swap };
      } catch (e) {
        if (!committed) fs.rmSync(staging, { recursive: true, force: true });
        // The trainer may hold the imported adapter: it trains on from what is served.
        if (w && w === this.worker && this.workerReady) await w.request({ type: "load", dir: this.activeDir() }).catch(() => undefined);
        if (e instanceof ActivationError) throw e;
        throw new ActivationError(`cannot import ${source}: ${(e as Error).message.split("\n")[0]}`, e instanceof WorkerExitError ? 503 : 500);
      } finally {
        if (this.worker && this.workerReady && (this.st.state === "evaluating" || this.st.state === "publishing")) this.setPhase(this.st.paused ? "paused" : "idle");
        this.kick();
      }
    });
    this.lock = run.catch(() => undefined);
    return run;
  }

  pin(n: number, pinned: boolean): CheckpointEntry {
    return this.o.checkpoints.update(n, { pinned });
  }

  /** Kills the trainer in a test (the fault test); the supervisor restarts it. */
  killTrainer(signal: NodeJS.Signals = "SIGKILL"): void {
    this.worker?.kill(signal);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // No new checks; one in progress finishes after the trainer is gone (a rollback it started still swaps).
    this.watch?.disarm();
    this.offPool();
    this.offSettings();
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const w = this.worker;
    this.worker = null;
    await w?.stop();
    await this.watch?.close();
  }
}
