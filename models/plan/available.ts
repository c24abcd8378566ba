/**
 * What memory the trainer may use, read at the moment it plans: the host's available RAM
 * (Linux's MemAvailable, which counts reclaimable page cache; os.freemem() elsewhere) and what
 * the started tfjs backend reports about its own memory.
 */
import fs from "node:fs";
import os from "node:os";
import type { BackendMemory } from "./memoryPlan.js";

/**
 * RAM the trainer may plan with: what the OS says is available, capped by
 * CLAWRL_TRAINER_RAM_LIMIT (bytes, or with a K/M/G suffix) when a user keeps the trainer small.
 */
export function hostAvailableBytes(env: NodeJS.ProcessEnv = process.env): number {
  let available = os.freemem();
  try {
    const m = /^MemAvailable:\s+(\d+) kB$/m.exec(fs.readFileSync("/proc/meminfo", "utf8"));
    if (m) available = Number(m[1]) * 1024;
  } catch {
    // Not Linux: os.freemem().
  }
  const limit = parseByteSize(env.CLAWRL_TRAINER_RAM_LIMIT);
  return limit === null ? available : Math.min(available, limit);
}

/** "512M", "2G", "1500000000" → bytes; null when unset; a bad value is an error, not ignored. */
export function parseByteSize(v: string | undefined): number | null {
  if (v === undefined || v.trim() === "") return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$/i.exec(v);
  if (!m) throw new Error(`CLAWRL_TRAINER_RAM_LIMIT: '${v}' is not a size (e.g. 2G, 512M, or bytes)`);
  const scale = { "": 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }[m[2].toLowerCase() as "" | "k" | "m" | "g" | "t"];
  return Math.floor(Number(m[1]) * scale);
}

/** tfjs-backend-wasm's heap is one 32-bit WebAssembly memory: Emscripten's getHeapMax(). */
export const WASM_HEAP_MAX_BYTES = 4294901760;

/**
 * The part of the wasm heap the plan may fill: emmalloc fragments under the step's changing
 * tensor sizes (measured: 3.46 GiB of heap for a plan of 3.64 GiB), and running out is an
 * Aborted() that kills the trainer, so 15% stays free.
 */
export function usableWasmHeap(limit: number | undefined): number | undefined {
  return limit === undefined ? undefined : Math.floor(limit * 0.85);
}

/**
 * What a started trainer backend says of its memory (the fields of the trainer's BackendChoice,
 * trainer/backend.ts, that the plan reads).
 */
export interface StartedBackend {
  name: string;
  device: string;
  memoryBytes?: number;
  wasmHeapLimitBytes?: number;
  webgpu?: { software: string | null; maxStorageBufferBindingSize: number };
}

/** The memory facts of a started backend, as the plan needs them. */
export function backendMemory(choice: StartedBackend): BackendMemory {
  switch (choice.name) {
    case "wasm":
      return { name: "wasm", deviceBytes: usableWasmHeap(choice.wasmHeapLimitBytes ?? choice.memoryBytes), sharesHostMemory: true };
    case "cpu":
      return { name: "cpu", sharesHostMemory: true };
    case "webgpu":
      return {
        name: "webgpu",
        // A software adapter's buffers are host memory; a GPU's size is not reported by WebGPU.
        sharesHostMemory: Boolean(choice.webgpu?.software),
        maxTensorBytes: choice.webgpu?.maxStorageBufferBindingSize,
      };
    default:
      // tfjs-node: CPU tensors live in the process; tfjs-node-gpu's on a GPU that does not say its size.
      return choice.device === "cuda" ? { name: choice.name, sharesHostMemory: false } : { name: choice.name, sharesHostMemory: true };
  }
}
