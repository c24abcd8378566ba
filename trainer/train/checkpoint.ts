import fs from "node:fs";
import path from "node:path";
import { readLoraAdapter, writeLoraAdapter } from "../lora/adapter-file.js";
import { disposeLora, type LoraParams } from "../lora/params.js";
import type { BaseModel } from "../model/base-model.js";
import { AdamW, type AdamWOptions } from "../optim/adamw.js";
import { writeFileAtomicSync } from "../../common/fs/atomicFile.js";
import { readOptimizerState, writeOptimizerState } from "../../models/adapters/optimizerState.js";
import type { Method } from "../loss/advantages.js";
import type { StepMetrics, TrainState } from "./trainSteps.js";
import { loraParamRecord } from "./trainSteps.js";

/** The files of a training output directory. */
export const CHECKPOINT_FILES = {
  adapter: "adapter.gguf",
  optimizer: "optimizer.bin",
  metrics: "metrics.json",
} as const;

/** What the base model is; a resume refuses another. */
export interface ModelIdentity {
  arch: string;
  nLayer: number;
  nEmbd: number;
  nVocab: number;
}

export function modelIdentity(model: BaseModel): ModelIdentity {
  const c = model.config;
  return { arch: c.arch, nLayer: c.nLayer, nEmbd: c.nEmbd, nVocab: c.nVocab };
}

export interface RunMetrics {
  version: 1;
  model: ModelIdentity & { file: string };
  method: Method;
  rank: number;
  alpha: number;
  lr: number;
  maxContext: number;
  batchSize: number;
  /** Who scored hinted prompts (OPD teacher) and the KL weight, as this run used them
   * (optional: writers from before these fields, e.g. the worker, leave them out). */
  teacher?: "current" | "base";
  klBeta?: number;
  /** Optimizer steps done in total (across resumes). */
  totalSteps: number;
  samples: number;
  /** Samples whose prompt (or response) was cut to fit maxContext. */
  truncatedSamples: number;
  backend: string;
  /** Every step of every run that led to this checkpoint. */
  steps: StepMetrics[];
}

/**
 * Writes adapter.gguf, optimizer.bin and metrics.json, each atomically (temp, fsync, rename),
 * metrics last: its totalSteps names the step the other two hold.
 */
export async function saveCheckpoint(dir: string, state: TrainState, metrics: RunMetrics): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  await writeLoraAdapter(path.join(dir, CHECKPOINT_FILES.adapter), state.model, state.lora);
  writeOptimizerState(path.join(dir, CHECKPOINT_FILES.optimizer), await state.optimizer.getState(), {
    model: modelIdentity(state.model),
    rank: state.lora.rank,
    alpha: state.lora.alpha,
  });
  writeFileAtomicSync(path.join(dir, CHECKPOINT_FILES.metrics), `${JSON.stringify(metrics, null, 2)}\n`, 0o644);
}

/**
 * Reads a checkpoint back for `model`: the adapter (refused if its architecture or shapes do
 * not fit the model), the optimizer moments (refused if they do not match the adapter), and
 * the metrics so far.
 */
export function loadCheckpoint(dir: string, model: BaseModel, optimizerOptions: AdamWOptions): { lora: LoraParams; optimizer: AdamW; metrics: RunMetrics } {
  for (const f of Object.values(CHECKPOINT_FILES)) {
    if (!fs.existsSync(path.join(dir, f))) throw new Error(`cannot resume from ${dir}: ${f} is missing`);
  }
  let metrics: RunMetrics;
  try {
    metrics = JSON.parse(fs.readFileSync(path.join(dir, CHECKPOINT_FILES.metrics), "utf8")) as RunMetrics;
  } catch (e) {
    throw new Error(`cannot resume from ${dir}: metrics.json is not valid JSON (${(e as Error).message.split("\n")[0]})`, { cause: e });
  }
  const want = modelIdentity(model);
  const have = metrics.model;
  if (!have || have.arch !== want.arch || have.nLayer !== want.nLayer || have.nEmbd !== want.nEmbd || have.nVocab !== want.nVocab) {
    const d = (m: Partial<ModelIdentity> | undefined) => (m ? `${m.arch} ${m.nLayer} layers, dim ${m.nEmbd}, vocab ${m.nVocab}` : "unknown");
    throw new Error(`cannot resume from ${dir}: it was trained on another model (${d(have)}), not this one (${d(want)})`);
  }
  const lora = readLoraAdapter(path.join(dir, CHECKPOINT_FILES.adapter), model);
  try {
    const { state } = readOptimizerState(path.join(dir, CHECKPOINT_FILES.optimizer));
    const optimizer = new AdamW(loraParamRecord(lora), optimizerOptions);
    try {
      optimizer.setState(state);
    } catch (e) {
      optimizer.dispose();
      throw e;
    }
    if (optimizer.step !== metrics.totalSteps) {
      optimizer.dispose();
      throw new Error(`optimizer state is at step ${optimizer.step} but metrics.json says ${metrics.totalSteps}`);
    }
    return { lora, optimizer, metrics };
  } catch (e) {
    disposeLora(lora);
    throw new Error(`cannot resume from ${dir}: ${(e as Error).message}`, { cause: e });
  }
}
