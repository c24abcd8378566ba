import os from "node:os";
import { readGguf } from "../../../models/gguf/reader.js";
import { kvCacheBytesPerToken } from "../../../models/gguf/summary.js";

/**
 * The context each served conversation gets on the CPU when the user has not set one: the
 * model's trained context, as far as its KV cache (all sequences) fits KV_RAM_SHARE of the
 * machine's RAM, never below DEFAULT_CONTEXT_FLOOR. node-llama-cpp fits a `{ max }` context to
 * *free* memory, and llama.cpp touches every page of the KV cache: left at Qwen3's 40,960 tokens,
 * a 1.7B model's 4 sequences took 18 GiB of a 24 GiB machine and the trainer was refused for want
 * of RAM. A share keeps room for the trainer and the rest of the machine, and still serves the
 * long contexts agents need (OpenClaw sends ≥ 16k tokens; the 1.7B shape gets 16,384 on 24 GiB,
 * a 0.5B model its full 32,768). On a GPU the cache lives in VRAM: node-llama-cpp's own fit.
 */
export const KV_RAM_SHARE = 0.3;
export const DEFAULT_CONTEXT_FLOOR = 4096;

/** The KV cache bytes per token of the model file at `modelPath` (models/gguf/summary.ts); null when unreadable or the header lacks the shape. */
export function kvBytesPerToken(modelPath: string): number | null {
  try {
    return kvCacheBytesPerToken(readGguf(modelPath));
  } catch {
    return null; // unreadable: the load itself says what is wrong
  }
}

/** The default upper bound on a served sequence's context on the CPU (see above). */
export function defaultServingContext(trainContextSize: number, kvPerToken: number | null, sequences: number, totalRamBytes = os.totalmem()): number {
  if (!kvPerToken) return trainContextSize;
  const fits = Math.floor((KV_RAM_SHARE * totalRamBytes) / (kvPerToken * Math.max(1, sequences)) / 1024) * 1024;
  return Math.min(trainContextSize, Math.max(DEFAULT_CONTEXT_FLOOR, fits));
}
