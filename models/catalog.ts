import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { SUPPORTED_ARCHS } from "../trainer/model/config.js";


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
  trainMemoryBytes: z.number().int().positive(),
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
}

/**
 * The model to suggest on first run: the largest one that can both serve and train on this
 * machine. Serving may sit on the GPU; training (the tfjs trainer keeps an f32 copy) needs RAM,
 * or VRAM with tfjs-node-gpu. We leave 40% of RAM to the OS and other apps.
 */
export function recommendModel(facts: MachineFacts, catalog = loadCatalog()): { entry: CatalogEntry; reason: string } {
  const budget = facts.ramBytes * 0.6;
  const trainBudget = Math.max(budget, facts.vramBytes * 0.9);
  const fits = catalog.filter((m) => m.serveMemoryBytes + Math.min(m.trainMemoryBytes, trainBudget) <= budget + facts.vramBytes && m.trainMemoryBytes <= trainBudget);
  const pick = [...fits].sort((a, b) => b.parameters - a.parameters)[0];
  const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;
  if (!pick) {
    const smallest = [...catalog].sort((a, b) => a.parameters - b.parameters)[0];
    return { entry: smallest, reason: `This machine has ${gib(facts.ramBytes)} of RAM: even the smallest model is tight; it may be slow.` };
  }
  return {
    entry: pick,
    reason: `Largest model that serves and trains within ${gib(facts.ramBytes)} RAM${facts.vramBytes ? ` and ${gib(facts.vramBytes)} GPU memory` : ""}.`,
  };
}
