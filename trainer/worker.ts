/**
 * The trainer process: a Node child of the core, driven over IPC by
 * electron/core/training/supervisor.ts with the messages of protocol.ts. It loads the base
 * model once, keeps the LoRA and AdamW state between batches, and writes each candidate into a
 * new directory. Commands run one at a time, in arrival order.
 */
import fs from "node:fs";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend, releaseFreeGpuBuffers, type BackendChoice } from "./backend.js";
import { readLoraAdapter } from "./lora/adapter-file.js";
import { createLora, disposeLora, type LoraParams } from "./lora/params.js";
import type { BaseModel } from "./model/base-model.js";
import type { MemoryPlan } from "../models/plan/memoryPlan.js";
import { loadForTraining, TrainerMemoryError } from "./plan/loadForTraining.js";
import { AdamW } from "./optim/adamw.js";
import { heapBytesOf, type BackendWasmLike } from "./wasm/internals.js";
import { commandSchema, describeProtocolError, type Command, type MemoryPlanSummary, type Reply, type ScoredSequence, type TrainSettings } from "./protocol.js";
import { loadCheckpoint, modelIdentity, saveCheckpoint, type RunMetrics } from "./train/checkpoint.js";
import { gateFigures } from "./train/gateScores.js";
import { loraFingerprint, PassCache } from "./train/passCache.js";
import { SampleTokenizer, type PreparedSample } from "./train/tokenize.js";
import { loraParamRecord, prepareAnchors, trainSteps, type StepMetrics } from "./train/trainSteps.js";

interface Loaded {
  modelPath: string;
  settings: TrainSettings;
  backend: BackendChoice;
  model: BaseModel;
  /** Where the weights live, the context and micro-batch size memory allows. */
  plan: MemoryPlan;
  /** Blocks whose activations a micro-batch keeps (loadForTraining). */
  keptBlocksAt: (seqs: number, T: number) => number;
  tokenizer: SampleTokenizer;
  lora: LoraParams;
  optimizer: AdamW;
  /** recent step metrics carried into each checkpoint's metrics.json (bounded) */
  history: StepMetrics[];
  /** What a cycle's passes leave for the next ones (train/passCache.ts): the process stays warm between cycles. */
  cache: PassCache;
}

let w: Loaded | null = null;
const HISTORY = 200;
/** Samples per step the memory plan sizes micro-batches for (the supervisor's default batch). */
const PLAN_BATCH = 16;

function planSummary(p: MemoryPlan): MemoryPlanSummary {
  const {
    fits,
    backend,
    summary,
    placement,
    maxContext,
    requestedMaxContext,
    maxContextThatFits,
    microBatchTokens,
    keptBlocks,
    needDeviceBytes,
    availableDeviceBytes,
    needHostBytes,
    availableHostBytes,
  } = p;
  return {
    fits,
    backend,
    summary,
    placement,
    maxContext,
    requestedMaxContext,
    maxContextThatFits,
    microBatchTokens,
    keptBlocks,
    needDeviceBytes,
    availableDeviceBytes,
    needHostBytes,
    availableHostBytes,
  };
}

function send(msg: Reply): void {
  process.send?.(msg);
}

function need(): Loaded {
  if (!w) throw new Error("the trainer has not been initialised");
  return w;
}

function setState(dir: string | null): number {
  const s = need();
  let lora: LoraParams;
  let optimizer: AdamW;
  let history: StepMetrics[] = [];
  if (dir) {
    const ck = loadCheckpoint(dir, s.model, { lr: s.settings.lr });
    lora = ck.lora;
    optimizer = ck.optimizer;
    history = (ck.metrics.steps ?? []).slice(-HISTORY);
  } else {
    lora = createLora(s.model, { rank: s.settings.rank, alpha: s.settings.alpha, seed: s.settings.seed });
    optimizer = new AdamW(loraParamRecord(lora), { lr: s.settings.lr });
  }
  s.optimizer.dispose();
  disposeLora(s.lora);
  s.lora = lora;
  s.optimizer = optimizer;
  s.history = history;
  // What was computed under the adapter goes; the base model's passes stay valid.
  s.cache.dropAdapterState();
  return optimizer.step;
}

async function init(cmd: Extract<Command, { type: "init" }>): Promise<Reply> {
  if (w) throw new Error("the trainer is already initialised");
  const backend = await initBackend(cmd.settings.backend);
  const { model, plan, keptBlocksAt } = await loadForTraining(cmd.modelPath, backend, {
    rank: cmd.settings.rank,
    maxContext: cmd.settings.maxContext,
    batchSize: PLAN_BATCH,
  });
  const tokenizer = await SampleTokenizer.open(cmd.modelPath);
  const lora = createLora(model, { rank: cmd.settings.rank, alpha: cmd.settings.alpha, seed: cmd.settings.seed });
  const optimizer = new AdamW(loraParamRecord(lora), { lr: cmd.settings.lr });
  w = { modelPath: cmd.modelPath, settings: cmd.settings, backend, model, plan, keptBlocksAt, tokenizer, lora, optimizer, history: [], cache: new PassCache() };
  const step = cmd.resumeDir ? setState(cmd.resumeDir) : 0;
  return { type: "ready", id: cmd.id, backend: backend.name, device: backend.device, step, plan: planSummary(plan) };
}

/** Tokenized samples as a run trains on them; a sample that cannot be is an error naming it. */
function prepareSamples(s: Loaded, samples: Extract<Command, { type: "train" }>["samples"]): PreparedSample[] {
  const prepared = samples.map((sample, i) => {
    try {
      return s.tokenizer.prepare(sample, { maxContext: s.plan.maxContext });
    } catch (e) {
      throw new Error(`sample ${i + 1}: ${(e as Error).message}`, { cause: e });
    }
  });
  const V = s.model.config.nVocab;
  for (const p of prepared) {
    const bad = [p.tokens, ...p.teachers.map((t) => t.tokens)].flat().find((t) => t >= V);
    if (bad !== undefined) throw new Error(`token id ${bad} is outside the model's vocabulary (${V} tokens)`);
  }
  return prepared;
}

/** The anchor's base scores of waiting samples, before their run (trainSteps.ts prepareAnchors). */
async function prepare(cmd: Extract<Command, { type: "prepare" }>): Promise<Reply> {
  const s = need();
  const t0 = performance.now();
  const klBeta = cmd.klBeta ?? s.settings.klBeta ?? 0;
  if (!(klBeta > 0)) return { type: "prepared", id: cmd.id, scored: 0, cached: 0, seconds: 0 };
  const r = await prepareAnchors(s.model, s.cache, prepareSamples(s, cmd.samples), s.settings.method, s.plan.microBatchTokens);
  return { type: "prepared", id: cmd.id, ...r, seconds: (performance.now() - t0) / 1000 };
}

async function train(cmd: Extract<Command, { type: "train" }>): Promise<Reply> {
  const s = need();
  const prepared = prepareSamples(s, cmd.samples);
  // The anchor to the base: the run's β, else the one the trainer started with.
  const klBeta = cmd.klBeta ?? s.settings.klBeta ?? 0;
  let i = 0;
  const done = await trainSteps(
    { model: s.model, lora: s.lora, optimizer: s.optimizer },
    prepared,
    {
      method: s.settings.method,
      steps: cmd.steps,
      batchSize: cmd.batchSize,
      lr: cmd.lr,
      teacher: s.settings.teacher,
      microBatchTokens: s.plan.microBatchTokens,
      keptBlocks: s.keptBlocksAt,
      ppo: { klBeta },
      cache: s.cache,
    },
    {
      onStep: (m) => send({ type: "progress", id: cmd.id, runId: cmd.runId, step: ++i, steps: cmd.steps, loss: m.loss, optimizerStep: m.step }),
      onProgress: (done, total) => send({ type: "work", id: cmd.id, done, total }),
    },
  );
  s.history = [...s.history, ...done].slice(-HISTORY);
  const metrics: RunMetrics = {
    version: 1,
    model: { ...modelIdentity(s.model), file: s.modelPath },
    method: s.settings.method,
    rank: s.lora.rank,
    alpha: s.lora.alpha,
    lr: cmd.lr,
    teacher: s.settings.teacher,
    klBeta,
    maxContext: s.plan.maxContext,
    batchSize: cmd.batchSize,
    totalSteps: s.optimizer.step,
    samples: prepared.length,
    truncatedSamples: prepared.filter((p) => p.truncated).length,
    backend: s.backend.name,
    steps: s.history,
  };
  if (fs.existsSync(cmd.outDir)) throw new Error(`${cmd.outDir} already exists: candidates go to new directories`);
  await saveCheckpoint(cmd.outDir, { model: s.model, lora: s.lora, optimizer: s.optimizer }, metrics);
  fsyncDir(cmd.outDir);
  const loss = done.length ? done.reduce((a, m) => a + m.loss, 0) / done.length : 0;
  return {
    type: "result",
    id: cmd.id,
    runId: cmd.runId,
    dir: cmd.outDir,
    totalSteps: s.optimizer.step,
    samples: prepared.length,
    loss,
    steps: done.map((m) => ({ ...m })),
  };
}

function fsyncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, "r");
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // Some platforms (Windows) cannot open a directory: the files themselves are fsynced.
  }
}

async function evaluate(cmd: Extract<Command, { type: "evaluate" }>): Promise<Reply> {
  const s = need();
  const t0 = performance.now();
  const fit = (q: ScoredSequence[]) => q.map((x) => fitSeq(x, s.plan.maxContext, s.model.config.nVocab)).filter((x): x is ScoredSequence => x !== null);
  const serving = cmd.servingAdapter ? readLoraAdapter(cmd.servingAdapter, s.model) : null;
  try {
    const prompts = fit(cmd.prompts);
    const liked = fit(cmd.liked);
    const disliked = fit(cmd.disliked);
    const heldBack = fit(cmd.heldBack ?? []);
    // Rows the cache holds are named by the adapter's fingerprint: the serving adapter's equals the
    // run start's when the trainer continued from it, the candidate's is the next cycle's serving one.
    const servingFingerprint = serving ? await loraFingerprint(serving) : null;
    const candidateFingerprint = await loraFingerprint(s.lora);
    // KL to the serving adapter and drift from the base model (KL to no adapter) on the recent
    // turns, drift on the held-back ones, log-probs of liked and disliked answers: one pass per
    // policy over each distinct turn (the sets overlap).
    const f = await gateFigures(
      s.model,
      s.lora,
      serving,
      { prompts, liked, disliked, heldBack },
      {
        batchTokens: s.plan.microBatchTokens,
        onProgress: (fraction) => send({ type: "work", id: cmd.id, done: fraction, total: 1 }),
        cache: s.cache,
        servingFingerprint,
        candidateFingerprint,
      },
    );
    // Published, the candidate serves next; rejected, the trainer goes back to the serving adapter.
    s.cache.keepAdapters([servingFingerprint, candidateFingerprint]);
    const klToBase = { recent: f.recent.kl, heldBack: f.heldBack.kl, recentPositions: f.recent.positions, heldBackPositions: f.heldBack.positions };
    return {
      type: "evaluation",
      id: cmd.id,
      runId: cmd.runId,
      kl: f.kl.kl,
      positions: f.kl.positions,
      liked: f.liked,
      disliked: f.disliked,
      klToBase,
      ...(f.reuse ? { reusedRows: f.reuse.reusedRows, savedTokenBlocks: f.reuse.savedTokenBlocks } : {}),
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    if (serving) disposeLora(serving);
  }
}

/** Keeps the end of a long sequence (the answer matters), drops ones with foreign token ids. */
function fitSeq(s: ScoredSequence, maxContext: number, nVocab: number): ScoredSequence | null {
  if (s.tokens.some((t) => t >= nVocab)) return null;
  if (s.tokens.length <= maxContext) return s;
  const cut = s.tokens.length - maxContext;
  const start = Math.max(1, s.start - cut);
  return { tokens: s.tokens.slice(cut), start };
}

function verify(cmd: Extract<Command, { type: "verify" }>): Reply {
  const s = need();
  try {
    const ck = loadCheckpoint(cmd.dir, s.model, { lr: s.settings.lr });
    ck.optimizer.dispose();
    disposeLora(ck.lora);
    return { type: "verified", id: cmd.id, dir: cmd.dir, ok: true, error: null };
  } catch (e) {
    return { type: "verified", id: cmd.id, dir: cmd.dir, ok: false, error: (e as Error).message.split("\n")[0] };
  }
}

function memory(cmd: Extract<Command, { type: "memory" }>): Reply {
  const m = tf.memory();
  const u = process.memoryUsage();
  const wasmHeapBytes = tf.getBackend() === "wasm" ? heapBytesOf(tf.backend() as BackendWasmLike) : null;
  // The pass cache's rows are bounded (PassCache.maxRowBytes) and reported apart: what is left must be flat over cycles.
  const cacheTensors = w?.cache.tensorCount ?? 0;
  const cacheBytes = w?.cache.rowBytes ?? 0;
  return {
    type: "memory",
    id: cmd.id,
    tensors: m.numTensors - cacheTensors,
    tensorBytes: m.numBytes - cacheBytes,
    passCacheTensors: cacheTensors,
    passCacheBytes: cacheBytes,
    wasmHeapBytes,
    rssBytes: u.rss,
    jsHeapBytes: u.heapUsed,
  };
}

async function handle(cmd: Command): Promise<Reply | null> {
  switch (cmd.type) {
    case "init":
      return init(cmd);
    case "train":
      // Between runs the trainer idles: give back GPU buffers pooled for this run's shapes.
      return train(cmd).finally(releaseFreeGpuBuffers);
    case "evaluate":
      return evaluate(cmd).finally(releaseFreeGpuBuffers);
    case "prepare":
      return prepare(cmd).finally(releaseFreeGpuBuffers);
    case "load":
      return { type: "loaded", id: cmd.id, dir: cmd.dir, step: setState(cmd.dir) };
    case "verify":
      return verify(cmd);
    case "memory":
      return memory(cmd);
    case "shutdown":
      return null;
  }
}

let chain: Promise<void> = Promise.resolve();

process.on("message", (raw: unknown) => {
  const parsed = commandSchema.safeParse(raw);
  if (!parsed.success) {
    const maybeId = (raw as { id?: unknown } | null)?.id;
    send({ type: "error", id: typeof maybeId === "number" ? maybeId : null, message: `bad command: ${describeProtocolError(parsed.error)}` });
    return;
  }
  const cmd = parsed.data;
  chain = chain.then(async () => {
    try {
      const reply = await handle(cmd);
      if (reply) send(reply);
      else {
        w?.cache.dispose();
        await w?.tokenizer.dispose().catch(() => undefined);
        process.disconnect?.();
        process.exit(0);
      }
    } catch (e) {
      const plan = e instanceof TrainerMemoryError ? planSummary(e.plan) : undefined;
      send({ type: "error", id: cmd.id, message: (e as Error).message.split("\n")[0], ...(plan ? { plan } : {}) });
    }
  });
});

// The core went away: nothing left to train for.
process.on("disconnect", () => process.exit(0));

if (!process.send) {
  console.error(`${path.basename(process.argv[1] ?? "worker")}: the trainer worker runs as a child of the core (IPC channel missing)`);
  process.exit(2);
}
