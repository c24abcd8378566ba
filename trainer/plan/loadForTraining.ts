/**
 * Plans, then loads: the one way the trainer (worker and `clawrl train`) opens a base model.
 * A model that does not fit is refused from its GGUF header alone, before a byte of weights
 * is read, with needed vs available memory and what would fit.
 */
import type { BackendChoice } from "../backend.js";
import { loadBaseModel, type BaseModel } from "../model/base-model.js";
import { backendMemory, hostAvailableBytes } from "../../models/plan/available.js";
import { planMemory, readModelFootprint, type MemoryPlan } from "../../models/plan/memoryPlan.js";

export class TrainerMemoryError extends Error {
  constructor(readonly plan: MemoryPlan) {
    super(plan.summary);
    this.name = "TrainerMemoryError";
  }
}

export interface TrainingLoadOptions {
  rank: number;
  /** Longest sample asked for (the plan may lower it). */
  maxContext: number;
  /** Samples per step (a micro-batch never needs more). */
  batchSize: number;
}

export async function loadForTraining(modelPath: string, backend: BackendChoice, opts: TrainingLoadOptions): Promise<{ model: BaseModel; plan: MemoryPlan }> {
  const plan = planMemory({
    shape: readModelFootprint(modelPath),
    backend: backendMemory(backend),
    hostAvailableBytes: hostAvailableBytes(),
    rank: opts.rank,
    maxContext: opts.maxContext,
    batchSize: opts.batchSize,
  });
  if (!plan.fits) throw new TrainerMemoryError(plan);
  const model = await loadBaseModel(modelPath, { placement: plan.placement, headChunkRows: plan.headChunkRows });
  return { model, plan };
}
