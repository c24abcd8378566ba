import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { SUPPORTED_ARCHS } from "../trainer/model/config.js";
import { parseByteSize } from "../trainer/plan/available.js";
import { shortfall, type Trainability } from "./trainVerdict.js";

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
  sha256: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
  contextLength: z.number().int().positive(),
  license: z.string(),
  serveMemoryBytes: z.number().int().positive(),
  notes: z.string().default(""),
});
export type CatalogEntry = z.infer<typeof entrySchema>;

const catalogSchema = z.object({ models: z.array(entrySchema).min(1) });

let cached: CatalogEntry[] | undefined;

/** The recommended models shipped with the app (models/catalog.json), validated. */
export function loadCatalog(file = path.join(import.meta.dirname, "catalog.json")): CatalogEntry[] {
  if (cached && file === path.join(import.meta.dirname, "catalog.json")) return cached;
  const parsed = catalogSchema.parse(JSON.parse(fs.readFileSync(file, "utf8")));
  const ids = new Set<string>();
  for (const m of parsed.models) {
    if (ids.has(m.id)) throw new Error(`catalog: duplicate id ${m.id}`);
    ids.add(m.id);
  }
  cached = parsed.models;
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

/** RAM we plan with: 40% is left to the OS and other apps. */
const RAM_SHARE = 0.6;

/** What the trainer would have beside this model being served: the RAM share less what serving keeps in RAM. */
export function trainerRamBeside(entry: CatalogEntry, facts: Omit<MachineFacts, "planTraining">): number {
  const servedInRam = Math.max(0, entry.serveMemoryBytes - facts.vramBytes);
  const ram = Math.max(0, facts.ramBytes * RAM_SHARE - servedInRam);
  return facts.trainerRamLimitBytes == null ? ram : Math.min(ram, facts.trainerRamLimitBytes);
}

/**
 * The model to suggest on first run: the largest one that both serves on this machine (within
 * 60% of its RAM, plus the GPU's memory) and trains here, as the trainer's memory plan says
 * (facts.planTraining, models/trainability.ts) with the RAM left beside the served model.
 * Pure: the machine's facts and the plan are passed in (this module stays free of tfjs).
 */
export function recommendModel(facts: MachineFacts, catalog = loadCatalog()): Recommendation {
  const budget = facts.ramBytes * RAM_SHARE;
  const verdict = (m: CatalogEntry): Trainability | null => facts.planTraining(m, trainerRamBeside(m, facts));
  const serves = catalog.filter((m) => m.serveMemoryBytes <= budget + facts.vramBytes);
  const bySize = [...serves].sort((a, b) => b.parameters - a.parameters);
  for (const m of bySize) {
    const t = verdict(m);
    if (t?.fits) {
      return {
        entry: m,
        training: t,
        reason: `Largest model that serves within ${gib(facts.ramBytes)} RAM${facts.vramBytes ? ` and ${gib(facts.vramBytes)} GPU memory` : ""} and trains here on ${t.backend} (context ${t.maxContext} tokens).`,
      };
    }
  }
  const smallest = [...catalog].sort((a, b) => a.parameters - b.parameters)[0];
  const t = verdict(smallest);
  if (!serves.includes(smallest)) return { entry: smallest, training: t, reason: `This machine has ${gib(facts.ramBytes)} of RAM: even the smallest model is tight; it may be slow.` };
  return {
    entry: smallest,
    training: t,
    reason: `No model can train here${t ? ` on ${t.backend}` : ""}${t && shortfall(t) ? ` (the smallest ${shortfall(t)})` : ""}: the smallest one chats, without learning.`,
  };
}
