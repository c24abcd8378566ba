import os from "node:os";
import { readGguf } from "../../../models/gguf/reader.js";
import { kvCacheBytesPerToken } from "../../../models/gguf/summary.js";

/**
 * The context each served conversation gets on the CPU when the user has not set one, and how
 * many conversations are served at once. node-llama-cpp fits a `{ max }` context to *free*
 * memory, and llama.cpp touches every page of the KV cache when it makes a context: left at
 * Qwen3's 40,960 tokens, a 1.7B model's 4 sequences took 18 GiB of a 24 GiB machine and the
 * trainer was refused for want of RAM. So the KV caches keep to KV_RAM_SHARE of the machine's
 * RAM, counted for two contexts: an adapter swap builds the next adapter's context while the
 * current one serves (adapterGate.ts; measured, each context's cache is resident from its
 * creation: 1.5 GiB for the 0.5B shape at 4 × 32,768 tokens). Within that, agents' long
 * prompts come first (OpenClaw sends ≥ 16k tokens): fewer conversations at once (down to
 * MIN_SEQUENCES, the rest wait in the queue) before a context below AGENT_CONTEXT. The 1.7B
 * shape on 24 GiB gets 2 × 16,384 tokens, a 0.5B model 4 × its full 32,768. On a GPU the cache
 * lives in VRAM: node-llama-cpp's own fit, at the asked sequences.
 */
export const KV_RAM_SHARE = 0.3;
export const DEFAULT_CONTEXT_FLOOR = 4096;
/** The context an agent's prompts need (OpenClaw's system prompt and tools alone are ~16k tokens). */
export const AGENT_CONTEXT = 16384;
export const MIN_SEQUENCES = 2;
/** Contexts alive at once at worst: the serving one and the one an adapter swap builds. */
const CONTEXTS_AT_A_SWAP = 2;

/** The KV cache bytes per token of the model file at `modelPath` (models/gguf/summary.ts); null when unreadable or the header lacks the shape. */
export function kvBytesPerToken(modelPath: string): number | null {
  try {
    return kvCacheBytesPerToken(readGguf(modelPath));
  } catch {
    return null; // unreadable: the load itself says what is wrong
  }
}

/** The default context per sequence for `sequences` sequences (see above). */
export function defaultServingContext(trainContextSize: number, kvPerToken: number | null, sequences: number, totalRamBytes = os.totalmem()): number {
  if (!kvPerToken) return trainContextSize;
  const fits = Math.floor((KV_RAM_SHARE * totalRamBytes) / (kvPerToken * Math.max(1, sequences) * CONTEXTS_AT_A_SWAP) / 1024) * 1024;
  return Math.min(trainContextSize, Math.max(DEFAULT_CONTEXT_FLOOR, fits));
}

/**
 * The default (context, sequences) on the CPU: `preferred` sequences, halved (not below
 * MIN_SEQUENCES) while that is what it takes for the context to reach AGENT_CONTEXT (or the
 * trained context when shorter); when no count reaches it, `preferred` at what fits.
 */
export function defaultServingShape(
  trainContextSize: number,
  kvPerToken: number | null,
  preferred: number,
  totalRamBytes = os.totalmem(),
): { contextSize: number; sequences: number } {
  const wanted = Math.min(trainContextSize, AGENT_CONTEXT);
  for (let seqs = preferred; seqs >= Math.min(preferred, MIN_SEQUENCES); seqs = Math.floor(seqs / 2)) {
    const contextSize = defaultServingContext(trainContextSize, kvPerToken, seqs, totalRamBytes);
    if (contextSize >= wanted) return { contextSize, sequences: seqs };
    if (seqs <= MIN_SEQUENCES) break;
  }
  return { contextSize: defaultServingContext(trainContextSize, kvPerToken, preferred, totalRamBytes), sequences: preferred };
}
