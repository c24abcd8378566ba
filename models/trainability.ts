/**
 * Can this model be trained on this machine, and how? The trainer's memory plan
 * (trainer/plan/memoryPlan.ts) applied before anything is downloaded or loaded: from a
 * catalog entry's real shape (models/tiny/shapes.ts) or an installed file's GGUF header, for
 * the trainer backend this machine has (what the trainer last reported; wasm, which is always
 * there, until it has run).
 */
import type { ModelConfig } from "../trainer/model/config.js";
import { hostAvailableBytes } from "../trainer/plan/available.js";
import { describePlacement, modelShapeFromConfig, planMemory, readModelShape, type BackendMemory, type ModelShape } from "../trainer/plan/memoryPlan.js";
import type { CatalogEntry } from "./catalog.js";
import { MODEL_SHAPES, type ModelShape as RealShape } from "./tiny/shapes.js";

/** The backend every machine has: tfjs-backend-wasm, whose heap stops at 4 GiB. */
export const WASM_BACKEND: BackendMemory = { name: "wasm", deviceBytes: 4294901760, sharesHostMemory: true };

/** The training context the app asks for by default (settings.maxContext). */
const DEFAULT_CONTEXT = 2048;
const DEFAULT_RANK = 16;
const DEFAULT_BATCH = 16;

export interface Trainability {
  fits: boolean;
  /** tfjs backend the verdict is for. */
  backend: string;
  /** Longest context a sample keeps (0 when it does not fit). */
  maxContext: number;
  /** One line: where the weights live and what it needs, or why it cannot train. */
  summary: string;
}

/** The trainer's config for a real shape of the catalog. */
export function configOfShape(s: RealShape): ModelConfig {
  return {
    arch: s.arch,
    nLayer: s.layers,
    nEmbd: s.dim,
    nHead: s.heads,
    nHeadKv: s.kvHeads,
    headDim: s.headDim,
    headDimV: s.headDim,
    nFf: s.ffn,
    nVocab: s.vocab,
    ropeDim: s.headDim,
    ropeBase: s.ropeBase,
    ropeFreqScale: 1,
    ropeMode: s.arch === "llama" ? "normal" : "neox",
    rmsEps: s.rmsEps,
    contextLength: s.contextLength,
    tiedOutput: s.tiedOutput,
    qkvBias: s.qkvBias,
    qkNorm: s.qkNorm,
  };
}

/** A catalog model's shape, without its file (null for a model with no known shape). */
export function catalogShape(entry: CatalogEntry): ModelShape | null {
  const real = MODEL_SHAPES.find((s) => s.catalogId === entry.id);
  return real ? modelShapeFromConfig(configOfShape(real), entry.sizeBytes) : null;
}

export interface TrainabilityOptions {
  backend?: BackendMemory;
  hostBytes?: number;
  maxContext?: number;
  rank?: number;
}

export function trainabilityOf(shape: ModelShape, o: TrainabilityOptions = {}): Trainability {
  const backend = o.backend ?? WASM_BACKEND;
  const plan = planMemory({
    shape,
    backend,
    hostAvailableBytes: o.hostBytes ?? hostAvailableBytes(),
    rank: o.rank ?? DEFAULT_RANK,
    maxContext: o.maxContext ?? DEFAULT_CONTEXT,
    batchSize: DEFAULT_BATCH,
  });
  return plan.fits
    ? { fits: true, backend: backend.name, maxContext: plan.maxContext, summary: `${describePlacement(plan.placement)}, context ${plan.maxContext} tokens` }
    : { fits: false, backend: backend.name, maxContext: 0, summary: plan.summary };
}

/** For an installed GGUF (its header only); null when the trainer cannot read it (another architecture). */
export function installedTrainability(file: string, o: TrainabilityOptions = {}): Trainability | null {
  let shape: ModelShape;
  try {
    shape = readModelShape(file);
  } catch {
    return null;
  }
  return trainabilityOf(shape, o);
}
