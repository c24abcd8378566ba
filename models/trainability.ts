/**
 * Can this model be trained on this machine, and how? The trainer's memory plan
 * (models/plan/memoryPlan.ts) applied before anything is downloaded or loaded: from a
 * catalog entry's real shape (models/tiny/shapes.ts) or an installed file's GGUF header, for
 * the trainer backend this machine has (what the trainer last reported; wasm, which is always
 * there, until it has run). Plain arithmetic on a header: no tensor library is loaded, so the
 * core and the CLI import it as they import the verdict's types (models/trainVerdict.ts).
 */
import type { ModelConfig } from "./arch/config.js";
import { hostAvailableBytes } from "./plan/available.js";
import { describePlacement, footprintFromConfig, planMemory, readModelFootprint, type BackendMemory, type ModelFootprint } from "./plan/memoryPlan.js";
import { LORA_DEFAULTS } from "./adapters/loraDefaults.js";
import type { CatalogEntry } from "./catalog.js";
import { MODEL_SHAPES, type RealShape } from "./tiny/shapes.js";
import { APP_TRAIN_CONTEXT, verdictOfPlan, WASM_BACKEND, type Trainability } from "./trainVerdict.js";

// The verdicts' types and readers, for callers that import the planning itself.
export * from "./trainVerdict.js";
/** An installed file's shape from its already-read GGUF header. */
export { modelFootprintOf } from "./plan/memoryPlan.js";

const DEFAULT_CONTEXT = APP_TRAIN_CONTEXT;
const DEFAULT_BATCH = 16;

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
export function catalogFootprint(entry: CatalogEntry): ModelFootprint | null {
  const real = MODEL_SHAPES.find((s) => s.catalogId === entry.id);
  return real ? footprintFromConfig(configOfShape(real), entry.sizeBytes) : null;
}

export interface TrainabilityOptions {
  backend?: BackendMemory;
  hostBytes?: number;
  maxContext?: number;
  rank?: number;
}

export function trainabilityOf(shape: ModelFootprint, o: TrainabilityOptions = {}): Trainability {
  const backend = o.backend ?? WASM_BACKEND;
  const plan = planMemory({
    shape,
    backend,
    hostAvailableBytes: o.hostBytes ?? hostAvailableBytes(),
    rank: o.rank ?? LORA_DEFAULTS.rank,
    maxContext: o.maxContext ?? DEFAULT_CONTEXT,
    batchSize: DEFAULT_BATCH,
  });
  return verdictOfPlan(plan, backend.name, plan.fits ? `${describePlacement(plan.placement)}, context ${plan.maxContext} tokens` : plan.summary);
}

/** For an installed GGUF (its header only); null when the trainer cannot read it (another architecture). */
export function installedTrainability(file: string, o: TrainabilityOptions = {}): Trainability | null {
  let shape: ModelFootprint;
  try {
    shape = readModelFootprint(file);
  } catch {
    return null;
  }
  return trainabilityOf(shape, o);
}

/**
 * The trainer's plan for catalog models, as recommendModel (models/catalog.ts) takes it: the
 * verdict for an entry given the RAM the trainer would have beside it being served.
 */
export function catalogPlanner(o: Omit<TrainabilityOptions, "hostBytes"> = {}): (entry: CatalogEntry, trainerRamBytes: number) => Trainability | null {
  return (entry, trainerRamBytes) => {
    const shape = catalogFootprint(entry);
    return shape && trainabilityOf(shape, { ...o, hostBytes: trainerRamBytes });
  };
}

/** A model known by its architecture config and file size only (a Hugging Face file read by its header): the same plan as a catalog model's. */
export function configTrainability(config: ModelConfig, fileBytes: number, o: TrainabilityOptions = {}): Trainability {
  return trainabilityOf(footprintFromConfig(config, fileBytes), o);
}
