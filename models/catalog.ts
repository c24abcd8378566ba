import fs from "node:fs";
import os from "node:os";
import { z } from "zod";
import shippedCatalog from "./catalog.json" with { type: "json" };
import { SUPPORTED_ARCHS } from "./arch/config.js";
import { parseByteSize } from "./plan/available.js";
import { APP_TRAIN_CONTEXT, shortfall, type Trainability } from "./trainVerdict.js";

const entrySchema = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/),
  name: z.string(),
  repo: z.string().regex(/^[^/\s]+\/[^/\s]+$/),
  file: z.string().endsWith(".gguf"),
  revision: z.string().default("main"),
  architecture: z.enum(SUPPORTED_ARCHS),
  parameters: z.number().int().positive(),
  quantization: z.string(),
  sizeBytes: z.number().int().positive(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  contextLength: z.number().int().positive(),
  license: z.string(),
  serveMemoryBytes: z.number().int().positive(),
  notes: z.string().default(""),
});
export type CatalogEntry = z.infer<typeof entrySchema>;

/** An embedding model for /v1/embeddings (BERT-style: not served for chat, never trained). */
const embeddingEntrySchema = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/),
  name: z.string(),
  repo: z.string().regex(/^[^/\s]+\/[^/\s]+$/),
  file: z.string().endsWith(".gguf"),
  revision: z.string().default("main"),
  /** as the GGUF names it (bert, nomic-bert, ...) */
  architecture: z.string(),
  parameters: z.number().int().positive(),
  quantization: z.string(),
  sizeBytes: z.number().int().positive(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  contextLength: z.number().int().positive(),
  /** width of its vectors */
  dimensions: z.number().int().positive(),
  license: z.string(),
  notes: z.string().default(""),
});
export type EmbeddingCatalogEntry = z.infer<typeof embeddingEntrySchema>;

const catalogSchema = z.object({ models: z.array(entrySchema).min(1), embeddingModels: z.array(embeddingEntrySchema).default([]) });

/** The embedding models shipped in the catalog (models/catalog.json `embeddingModels`), validated; ids distinct from the chat models'. */
export function loadEmbeddingCatalog(): EmbeddingCatalogEntry[] {
  const parsed = catalogSchema.parse(shippedCatalog);
  const chat = new Set(parsed.models.map((m) => m.id));
  for (const e of parsed.embeddingModels) if (chat.has(e.id)) throw new Error(`catalog: embedding model id ${e.id} is also a chat model's`);
  return parsed.embeddingModels;
}

export function findEmbeddingCatalogEntry(id: string): EmbeddingCatalogEntry | undefined {
  return loadEmbeddingCatalog().find((m) => m.id === id);
}

let cached: CatalogEntry[] | undefined;

/**
 * The recommended models shipped with the app (models/catalog.json, imported so that the
 * bundled core carries it), validated; `file` reads another catalog (tests).
 */
export function loadCatalog(file?: string): CatalogEntry[] {
  if (cached && file === undefined) return cached;
  const parsed = catalogSchema.parse(file === undefined ? shippedCatalog : JSON.parse(fs.readFileSync(file, "utf8")));
  const ids = new Set<string>();
  for (const m of parsed.models) {
    if (ids.has(m.id)) throw new Error(`catalog: duplicate id ${m.id}`);
    ids.add(m.id);
  }
  if (file === undefined) cached = parsed.models;
  return parsed.models;
}

export function findCatalogEntry(id: string): CatalogEntry | undefined {
  return loadCatalog().find((m) => m.id === id);
}

export interface MachineFacts {
  ramBytes: number;
  /** Free VRAM of the best GPU, 0 when none. */
  vramBytes: number;
  /** CLAWRL_TRAINER_RAM_LIMIT, when a user keeps the trainer small. */
  trainerRamLimitBytes?: number | null;
  /** CPU threads the trainer can use (default: this machine's). */
  cpuCores?: number;
  /** The trainer runs on a GPU (tfjs-node-gpu, webgpu on a hardware adapter): speed is not the limit. */
  trainerOnGpu?: boolean;
  /**
   * The trainer's memory plan for a catalog model, given the RAM the trainer would have beside
   * it (models/trainability.ts catalogPlanner: on the trainer's backend, wasm until the trainer
   * has reported another, at the app's training context and rank).
   */
  planTraining: (entry: CatalogEntry, trainerRamBytes: number) => Trainability | null;
}

export interface Recommendation {
  entry: CatalogEntry;
  reason: string;
  /** The trainer's memory plan for it on this machine (null: no known shape). */
  training: Trainability | null;
}

/**
 * This machine as the CLI sees it: its RAM, no GPU memory known, and CLAWRL_TRAINER_RAM_LIMIT
 * (a malformed value is the trainer's to refuse; it is ignored here).
 */
export function localMachineFacts(env: NodeJS.ProcessEnv = process.env): Omit<MachineFacts, "planTraining"> {
  let limit: number | null = null;
  try {
    limit = parseByteSize(env.CLAWRL_TRAINER_RAM_LIMIT);
  } catch {
    // the trainer says what is wrong with it when it starts
  }
  return { ramBytes: os.totalmem(), vramBytes: 0, trainerRamLimitBytes: limit };
}

const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;

/** A batch of the live loop, in trained tokens (16 samples of ~256 tokens). */
const BATCH_TOKENS = 16 * 256;
/** Longest wait for one batch on a CPU backend that a first-run recommendation accepts. */
export const MAX_CPU_BATCH_SECONDS = 600;

/**
 * Rough seconds for one batch on the CPU (wasm, cpu, tfjs-node): 6 FLOPs per parameter per
 * token (forward, recompute, backward to the activations) at ~20 GFLOP/s per core
 * (bench/trainer-real-size.ts: 10-17 on one wasm thread), 70% efficient across up to 8 threads.
 */
export function cpuBatchSeconds(entry: CatalogEntry, cores: number): number {
  const flops = 6 * entry.parameters * BATCH_TOKENS;
  return flops / (20e9 * Math.max(1, Math.min(8, cores) * 0.7));
}

/** RAM we plan with: 40% is left to the OS and other apps. */
const RAM_SHARE = 0.6;

/** What the trainer would have beside this model being served: the RAM share less what serving keeps in RAM. */
export function trainerRamBeside(entry: CatalogEntry, facts: Omit<MachineFacts, "planTraining">): number {
  const servedInRam = Math.max(0, entry.serveMemoryBytes - facts.vramBytes);
  const ram = Math.max(0, facts.ramBytes * RAM_SHARE - servedInRam);
  return facts.trainerRamLimitBytes == null ? ram : Math.min(ram, facts.trainerRamLimitBytes);
}

/** Whether a model that takes `serveMemoryBytes` to serve fits this machine: within 60% of its RAM, plus the GPU's memory. */
export function servesHere(serveMemoryBytes: number, facts: Pick<MachineFacts, "ramBytes" | "vramBytes">): boolean {
  return serveMemoryBytes <= facts.ramBytes * RAM_SHARE + facts.vramBytes;
}

/** Whether a model serves here, with what it needs and what there is (the rule recommendModel applies: servesHere). */
export interface ServeFit {
  fits: boolean;
  needBytes: number;
  availableBytes: number;
  summary: string;
}

export function serveFit(serveMemoryBytes: number, facts: Pick<MachineFacts, "ramBytes" | "vramBytes">): ServeFit {
  const availableBytes = Math.floor(facts.ramBytes * RAM_SHARE + facts.vramBytes);
  const fits = servesHere(serveMemoryBytes, facts);
  const where = `${gib(facts.ramBytes * RAM_SHARE)} of RAM${facts.vramBytes ? ` and ${gib(facts.vramBytes)} of GPU memory` : ""} the app plans with`;
  return {
    fits,
    needBytes: serveMemoryBytes,
    availableBytes,
    summary: fits ? `serves in about ${gib(serveMemoryBytes)} of the ${where}` : `needs about ${gib(serveMemoryBytes)} to serve, more than the ${where}`,
  };
}

/** The context a served model's memory is estimated at (llama.cpp's cache for this many tokens). */
const SERVE_ESTIMATE_CONTEXT = 4096;
/** llama.cpp's compute buffers and the rest beside the weights and the cache. */
const SERVE_OVERHEAD_BYTES = 256 * 2 ** 20;

/**
 * What serving a file not in the catalog takes (the catalog's entries say theirs): its weights,
 * an f16 KV cache of 4096 tokens when its header gives the shape (models/gguf/summary.ts
 * kvCacheBytesPerToken; else 15% of the weights), and llama.cpp's buffers.
 */
export function serveMemoryOf(fileBytes: number, kvBytesPerToken?: number | null): number {
  const kv = kvBytesPerToken ? kvBytesPerToken * SERVE_ESTIMATE_CONTEXT : fileBytes * 0.15;
  return Math.round(fileBytes + kv + SERVE_OVERHEAD_BYTES);
}

/**
 * The model to suggest on first run: the largest one that both serves on this machine (within
 * 60% of its RAM, plus the GPU's memory) and trains here, as the trainer's memory plan says
 * (facts.planTraining, models/trainability.ts) with the RAM left beside the served model.
 * Pure: the machine's facts and the plan are passed in (this module stays free of tfjs).
 */
export function recommendModel(facts: MachineFacts, catalog = loadCatalog()): Recommendation {
  const verdict = (m: CatalogEntry): Trainability | null => facts.planTraining(m, trainerRamBeside(m, facts));
  const serves = catalog.filter((m) => servesHere(m.serveMemoryBytes, facts));
  const bySize = [...serves].sort((a, b) => b.parameters - a.parameters);
  // First choice: trains at the app's full context, and (on a CPU backend) a batch takes
  // minutes, not an hour; then anything that trains at all.
  const good = (m: CatalogEntry, t: Trainability) =>
    t.maxContext >= APP_TRAIN_CONTEXT &&
    (facts.trainerOnGpu === true || cpuBatchSeconds(m, facts.cpuCores ?? os.availableParallelism()) <= MAX_CPU_BATCH_SECONDS);
  const ranked = [...bySize.map((m) => ({ m, t: verdict(m) })).filter((x) => x.t?.fits && good(x.m, x.t)), ...bySize.map((m) => ({ m, t: verdict(m) }))];
  for (const { m, t } of ranked) {
    if (t?.fits) {
      return {
        entry: m,
        training: t,
        reason:
          `Largest model that serves within ${gib(facts.ramBytes)} RAM${facts.vramBytes ? ` and ${gib(facts.vramBytes)} GPU memory` : ""} and trains here on ${t.backend} ` +
          `(context ${t.maxContext} tokens${facts.trainerOnGpu ? "" : `, about ${Math.ceil(cpuBatchSeconds(m, facts.cpuCores ?? os.availableParallelism()) / 60)} min per batch of feedback`}).`,
      };
    }
  }
  const smallest = [...catalog].sort((a, b) => a.parameters - b.parameters)[0];
  const t = verdict(smallest);
  if (!serves.includes(smallest))
    return { entry: smallest, training: t, reason: `This machine has ${gib(facts.ramBytes)} of RAM: even the smallest model is tight; it may be slow.` };
  return {
    entry: smallest,
    training: t,
    reason: `No model can train here${t ? ` on ${t.backend}` : ""}${t && shortfall(t) ? ` (the smallest ${shortfall(t)})` : ""}: the smallest one chats, without learning.`,
  };
}
