/**
 * The trainer run in this process, offline, from a JSONL file of samples: `clawrl train`'s entry
 * (electron/core/cli/commands/train.ts imports it when the command runs). The live loop runs the
 * same steps in the trainer process (trainer/worker.ts).
 */
import fs from "node:fs";
import { initBackend } from "../backend.js";
import type { Method } from "../loss/advantages.js";
import type { PpoOptions } from "../loss/ppo.js";
import { createLora, disposeLora, type LoraParams } from "../lora/params.js";
import type { BaseModel } from "../model/base-model.js";
import { loadForTraining } from "../plan/loadForTraining.js";
import { ADAMW_DEFAULTS, AdamW } from "../optim/adamw.js";
import { loadCheckpoint, modelIdentity, saveCheckpoint, type RunMetrics } from "../train/checkpoint.js";
import { parseSamplesJsonl } from "../../models/samples/sample.js";
import { SampleTokenizer, type PreparedSample } from "../train/tokenize.js";
import { loraParamRecord, trainSteps, type StepMetrics } from "../train/trainSteps.js";
import { LORA_DEFAULTS } from "../../models/adapters/loraDefaults.js";

export const TRAIN_DEFAULTS = {
  method: "combined" as Method,
  steps: 10,
  lr: ADAMW_DEFAULTS.lr,
  rank: LORA_DEFAULTS.rank,
  alpha: LORA_DEFAULTS.alpha,
  maxContext: 2048,
  batchSize: 8,
  seed: 0,
};

export interface RunTrainingOptions {
  modelPath: string;
  /** JSONL samples file. */
  dataPath: string;
  outDir: string;
  resumeDir?: string;
  method?: Method;
  steps?: number;
  /** Learning rate; default 1e-4, or the resumed run's. */
  lr?: number;
  rank?: number;
  alpha?: number;
  maxContext?: number;
  batchSize?: number;
  seed?: number;
  backend?: string;
  teacher?: "current" | "base";
  ppo?: PpoOptions;
  /** Progress lines (backend choice, loading, truncation). */
  log?: (line: string) => void;
  onStep?: (m: StepMetrics, index: number, total: number) => void;
  /** How far the run is inside a step, in steps done (trainSteps' onProgress), at most once a second. */
  onProgress?: (stepsDone: number, steps: number) => void;
  signal?: AbortSignal;
}

/** Reads, validates and tokenizes every sample of a JSONL file (errors name the line). */
export async function prepareSamplesFile(modelPath: string, dataPath: string, maxContext: number): Promise<PreparedSample[]> {
  let text: string;
  try {
    text = fs.readFileSync(dataPath, "utf8");
  } catch (e) {
    throw new Error(`cannot read ${dataPath}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  const parsed = parseSamplesJsonl(text, dataPath);
  const tok = await SampleTokenizer.open(modelPath);
  try {
    return parsed.map(({ sample, line }) => {
      try {
        return tok.prepare(sample, { maxContext }, line);
      } catch (e) {
        throw new Error(`${dataPath}:${line}: ${(e as Error).message}`, { cause: e });
      }
    });
  } finally {
    await tok.dispose();
  }
}

function checkVocab(samples: PreparedSample[], model: BaseModel, dataPath: string): void {
  const V = model.config.nVocab;
  for (const s of samples) {
    const bad = [s.tokens, ...s.teachers.map((t) => t.tokens)].flat().find((id) => id >= V);
    if (bad !== undefined) throw new Error(`${dataPath}:${s.line ?? "?"}: token id ${bad} is outside the model's vocabulary (${V} tokens)`);
  }
}

/**
 * Offline training end to end: samples → (resumed or fresh) LoRA → `steps` updates →
 * OUT/adapter.gguf + optimizer.bin + metrics.json. Returns the metrics written.
 */
export async function runTraining(o: RunTrainingOptions): Promise<RunMetrics> {
  const log = o.log ?? (() => {});
  const method = o.method ?? TRAIN_DEFAULTS.method;
  const steps = o.steps ?? TRAIN_DEFAULTS.steps;
  const maxContext = o.maxContext ?? TRAIN_DEFAULTS.maxContext;
  const batchSize = o.batchSize ?? TRAIN_DEFAULTS.batchSize;
  // A resumed run keeps its learning rate unless told otherwise.
  let lr = o.lr ?? TRAIN_DEFAULTS.lr;
  const backend = await initBackend(o.backend, log);
  // Plan before loading: a model that does not fit is refused here, from its header.
  const { model, plan, keptBlocksAt } = await loadForTraining(o.modelPath, backend, { rank: o.rank ?? TRAIN_DEFAULTS.rank, maxContext, batchSize });
  log(`memory plan: ${plan.summary}`);
  let samples: PreparedSample[];
  try {
    samples = await prepareSamplesFile(o.modelPath, o.dataPath, plan.maxContext);
  } catch (e) {
    model.dispose();
    throw e;
  }
  const truncated = samples.filter((s) => s.truncated).length;
  if (truncated > 0)
    log(`${truncated} of ${samples.length} samples were cut to the maximum training context of ${plan.maxContext} tokens (the prompt keeps its end)`);
  let lora: LoraParams | undefined;
  let optimizer: AdamW | undefined;
  try {
    checkVocab(samples, model, o.dataPath);
    let previous: StepMetrics[] = [];
    if (o.resumeDir) {
      const ck = loadCheckpoint(o.resumeDir, model, { lr });
      if (o.lr === undefined && typeof ck.metrics.lr === "number") lr = ck.metrics.lr;
      lora = ck.lora;
      optimizer = ck.optimizer;
      previous = ck.metrics.steps ?? [];
      if (o.rank !== undefined && o.rank !== lora.rank) throw new Error(`--rank ${o.rank} does not match the resumed adapter's rank ${lora.rank}`);
      if (o.alpha !== undefined && o.alpha !== lora.alpha) throw new Error(`--alpha ${o.alpha} does not match the resumed adapter's alpha ${lora.alpha}`);
      log(`resumed from ${o.resumeDir} at step ${optimizer.step}`);
    } else {
      lora = createLora(model, { rank: o.rank ?? TRAIN_DEFAULTS.rank, alpha: o.alpha ?? TRAIN_DEFAULTS.alpha, seed: o.seed ?? TRAIN_DEFAULTS.seed });
      optimizer = new AdamW(loraParamRecord(lora), { lr });
    }
    const state = { model, lora, optimizer };
    let index = 0;
    const done = await trainSteps(
      state,
      samples,
      { method, steps, batchSize, lr, teacher: o.teacher, ppo: o.ppo, microBatchTokens: plan.microBatchTokens, keptBlocks: keptBlocksAt },
      {
        onStep: (m) => o.onStep?.(m, ++index, steps),
        onProgress: o.onProgress,
        signal: o.signal,
      },
    );
    const metrics: RunMetrics = {
      version: 1,
      model: { ...modelIdentity(model), file: o.modelPath },
      method,
      rank: lora.rank,
      alpha: lora.alpha,
      lr,
      maxContext: plan.maxContext,
      batchSize,
      teacher: o.teacher ?? "current",
      klBeta: o.ppo?.klBeta ?? 0,
      totalSteps: optimizer.step,
      samples: samples.length,
      truncatedSamples: truncated,
      backend: backend.name,
      steps: [...previous, ...done],
    };
    await saveCheckpoint(o.outDir, state, metrics);
    return metrics;
  } finally {
    optimizer?.dispose();
    if (lora) disposeLora(lora);
    model.dispose();
  }
}
