/**
 * Plans, then loads: the one way the trainer (worker and `clawrl train`) opens a base model.
 * A model that does not fit is refused from its GGUF header alone, before a byte of weights
 * is read, with needed vs available memory and what would fit.
 */
import type { BackendChoice } from "../backend.js";
import { loadBaseModel, type BaseModel } from "../model/base-model.js";
import { backendMemory, hostAvailableBytes } from "../../models/plan/available.js";
import { nativeProductsFor } from "../native/gemm.js";
import { nativeSwigluFor } from "../model/swiglu.js";
import { nativeRmsNormFor } from "../model/norm.js";
import { hostAttentionFor } from "../model/attention-host.js";
import { nativeCausalSoftmaxFor } from "../model/attention-softmax.js";
import { fusedLoraFor } from "../model/lora-linear.js";
import { keptBlocksThatFit, planMemory, readModelFootprint, type MemoryPlan, type PlanRequest } from "../../models/plan/memoryPlan.js";

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
  /** Keep block activations where memory allows (default true, unless CLAWRL_KEEP_ACTIVATIONS=0); false: recompute every block in the backward. */
  keepActivations?: boolean;
}

export interface TrainingLoad {
  model: BaseModel;
  plan: MemoryPlan;
  /**
   * Blocks whose activations a micro-batch of `seqs` sequences × `T` tokens may keep (no
   * recompute in the backward), by the same plan: the plan's keptBlocks at its micro-batch, more
   * for a smaller one. trainSteps' `keptBlocks`.
   */
  keptBlocksAt: (seqs: number, T: number) => number;
}

export async function loadForTraining(modelPath: string, backend: BackendChoice, opts: TrainingLoadOptions): Promise<TrainingLoad> {
  const req: PlanRequest = {
    shape: readModelFootprint(modelPath),
    backend: {
      ...backendMemory(backend),
      hostProducts: nativeProductsFor(backend.name) !== null,
      hostSwiglu: nativeSwigluFor(backend.name) !== null,
      hostLora: fusedLoraFor(backend.name),
      hostNorm: nativeRmsNormFor(backend.name) !== null,
      hostSoftmax: nativeCausalSoftmaxFor(backend.name) !== null,
      hostAttention: hostAttentionFor(backend.name),
    },
    hostAvailableBytes: hostAvailableBytes(),
    rank: opts.rank,
    maxContext: opts.maxContext,
    batchSize: opts.batchSize,
    // CLAWRL_KEEP_ACTIVATIONS=0 recomputes every block (bench/learning-cycle.ts --compare's baseline).
    keepActivations: opts.keepActivations ?? process.env.CLAWRL_KEEP_ACTIVATIONS !== "0",
  };
  const plan = planMemory(req);
  if (!plan.fits) throw new TrainerMemoryError(plan);
  const model = await loadBaseModel(modelPath, { placement: plan.placement, headChunkRows: plan.headChunkRows });
  const keptBlocksAt = (seqs: number, T: number) => (seqs * T <= plan.microBatchTokens ? keptBlocksThatFit(req, plan.placement, seqs, T) : plan.keptBlocks);
  return { model, plan, keptBlocksAt };
}
