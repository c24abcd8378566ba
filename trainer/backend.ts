/**
 * Picks the tfjs backend the trainer runs on. Order: CUDA (tfjs-node-gpu), WebGPU (Dawn through
 * the `webgpu` package + tfjs-backend-webgpu), native CPU (tfjs-node), WebAssembly
 * (tfjs-backend-wasm), plain JS (tfjs-backend-cpu). The native ones are optional dependencies
 * whose install downloads libtensorflow, so they are usually absent offline; webgpu's are
 * optional too (prebuilt Dawn in the npm package). Every other trainer module imports
 * @tensorflow/tfjs-core only.
 *
 * WebGPU on a software adapter (SwiftShader, lavapipe, llvmpipe, Microsoft Basic Render Driver,
 * a fallback adapter) is slower than wasm, so it is taken only when webgpu is asked for by name;
 * then, on Linux without a GPU, the software routes of ./webgpu/dawn.ts are tried too.
 *
 * wasm runs tfjs's threaded-SIMD build (XNNPACK on several threads) when more than one thread
 * is wanted (CLAWRL_WASM_THREADS, default min(8, cores)); if that build cannot start, the
 * single-threaded one does, and the device string says why (./wasm/threads.ts).
 */
import os from "node:os";
import { createRequire } from "node:module";
import * as tf from "@tensorflow/tfjs-core";
import { MAX_WASM_THREADS, startWasm, type WasmStarted } from "./wasm/threads.js";
import type { AdapterSummary } from "./webgpu/dawn.js";
import { startWebGpu } from "./webgpu/start.js";
import { nativeGemmStatus } from "./native/gemm.js";
import { registerInPlaceKernels } from "./wasm/inPlaceKernels.js";

// webgpu keeps every freed GPU buffer for reuse; the trainer may give them back between steps.
export { releaseFreeGpuBuffers } from "./webgpu/start.js";

/** The wasm backend's heap is one 32-bit WebAssembly memory (Emscripten's getHeapMax). */
export const WASM_HEAP_LIMIT_BYTES = 4294901760;

export interface BackendChoice {
  /** tfjs backend name now active: "tensorflow", "webgpu", "wasm" or "cpu". */
  name: string;
  /**
   * Human-readable device: "cuda", "webgpu (NVIDIA H100, vulkan)", "native cpu",
   * "wasm (simd, 4 threads)", "wasm (simd, 1 thread; threads unavailable: <why>)", "js cpu".
   */
  device: string;
  /** Backends tried before this one, with why each was not used. */
  skipped: Array<{ name: string; why: string }>;
  /**
   * Memory the backend's tensors live in, when the backend can tell: the machine's RAM for
   * the CPU backends, capped by the heap limit for wasm. Undefined for cuda and webgpu (WebGPU
   * does not report GPU memory; plan with `webgpu` limits and tf.memory().numBytesInGPU).
   */
  memoryBytes?: number;
  /** wasm: the most its heap can grow to, whatever the machine has (4 GiB − 64 KiB). */
  wasmHeapLimitBytes?: number;
  /** webgpu: the adapter, whether it is software, and the device's buffer limits. */
  webgpu?: AdapterSummary;
  /** wasm: XNNPACK threads wanted and running, and why the threaded build is not in use. */
  wasmThreads?: { wanted: number; threads: number; why?: string };
}

type Started = Pick<BackendChoice, "device" | "memoryBytes" | "wasmHeapLimitBytes" | "webgpu" | "wasmThreads">;

interface Candidate {
  name: string;
  /**
   * Loads and activates the backend, or throws (first line of the message: why not).
   * `explicit`: this backend was asked for by name.
   */
  start(explicit: boolean, log: (line: string) => void): Promise<Started>;
}

const require = createRequire(import.meta.url);

function firstLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split("\n")[0] ?? msg;
}

/** Imports a package only if it resolves, so "not installed" is told apart from a broken install. */
async function importIfInstalled(pkg: string): Promise<void> {
  try {
    require.resolve(pkg);
  } catch {
    throw new Error("not installed (optional dependency; its install downloads libtensorflow)");
  }
  await import(pkg);
}

async function activate(name: string): Promise<void> {
  const ok = await tf.setBackend(name);
  if (!ok || tf.getBackend() !== name) throw new Error(`tfjs could not initialise backend "${name}"`);
  await tf.ready();
}

const HANDLED_EVENTS = ["uncaughtException", "unhandledRejection"] as const;

// Plain EventEmitter view of process: its typed overloads do not take a union of event names.
const emitter: NodeJS.EventEmitter = process;

function processHandlers(): Map<string, Set<unknown>> {
  return new Map(HANDLED_EVENTS.map((e) => [e, new Set<unknown>(emitter.listeners(e))]));
}

function removeHandlersAddedSince(before: Map<string, Set<unknown>>): void {
  for (const e of HANDLED_EVENTS) {
    for (const l of emitter.listeners(e)) {
      if (!before.get(e)?.has(l)) emitter.removeListener(e, l as (...args: unknown[]) => void);
    }
  }
}

/**
 * Threads for the wasm backend: CLAWRL_WASM_THREADS (a whole number; 1 starts the
 * single-threaded build) or min(8, available cores); XNNPACK's cap in tfjs's build is 8.
 */
function wasmThreadsWanted(log: (line: string) => void): number {
  const fallback = Math.min(MAX_WASM_THREADS, os.availableParallelism());
  const raw = process.env.CLAWRL_WASM_THREADS?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    log(`trainer backend: CLAWRL_WASM_THREADS=${raw} is not a whole number ≥ 1; using ${fallback}`);
    return fallback;
  }
  if (n > MAX_WASM_THREADS) log(`trainer backend: CLAWRL_WASM_THREADS=${n}: wasm runs at most ${MAX_WASM_THREADS} threads`);
  return Math.min(n, MAX_WASM_THREADS);
}

/**
 * The native products of the frozen weights (trainer/native/gemm.ts) run beside the CPU
 * backends, on as many threads as wasm's XNNPACK is asked for; the log says which ISA, or why not.
 * Called for wasm and cpu only, where nativeProductsFor hands out the addon whenever it loaded.
 */
function startNativeProducts(backend: string, threads: number, log: (line: string) => void): void {
  const s = nativeGemmStatus();
  if (!s.loaded) {
    log(`trainer backend: frozen-weight products on ${backend} (native products unavailable: ${s.why})`);
    return;
  }
  s.gemm.setThreads(threads);
  log(`trainer backend: frozen-weight products native (${s.gemm.isa}, ${threads} thread${threads === 1 ? "" : "s"})`);
}

const CANDIDATES: Candidate[] = [
  {
    name: "tfjs-node-gpu",
    async start() {
      await importIfInstalled("@tensorflow/tfjs-node-gpu");
      await activate("tensorflow");
      return { device: "cuda" };
    },
  },
  {
    name: "webgpu",
    async start(explicit, log) {
      const { device, summary } = await startWebGpu({ allowSoftware: explicit, log });
      return { device, webgpu: summary };
    },
  },
  {
    name: "tfjs-node",
    async start() {
      await importIfInstalled("@tensorflow/tfjs-node");
      await activate("tensorflow");
      return { device: "native cpu", memoryBytes: os.totalmem() };
    },
  },
  {
    name: "wasm",
    async start(_explicit, log) {
      const want = wasmThreadsWanted(log);
      // The Emscripten runtime installs process handlers that re-throw every uncaught error
      // from inside its one-line, 30 kB loader, so Node prints that whole line with any crash.
      // Remove them: Node's default handling is what we want.
      const before = processHandlers();
      let w: WasmStarted;
      try {
        w = await startWasm({ threads: want, log });
      } finally {
        removeHandlersAddedSince(before);
      }
      startNativeProducts("wasm", want, log);
      registerInPlaceKernels();
      const threads = `${w.threads} thread${w.threads === 1 ? "" : "s"}`;
      const features = [w.simd ? "simd" : "no simd", w.why ? `${threads}; threads unavailable: ${w.why}` : threads];
      return {
        device: `wasm (${features.join(", ")})`,
        memoryBytes: Math.min(os.totalmem(), WASM_HEAP_LIMIT_BYTES),
        wasmHeapLimitBytes: WASM_HEAP_LIMIT_BYTES,
        wasmThreads: { wanted: w.wanted, threads: w.threads, ...(w.why ? { why: w.why } : {}) },
      };
    },
  },
  {
    name: "cpu",
    async start(_explicit, log) {
      await import("@tensorflow/tfjs-backend-cpu");
      await activate("cpu");
      startNativeProducts("cpu", os.availableParallelism(), log);
      return { device: "js cpu", memoryBytes: os.totalmem() };
    },
  },
];

let current: BackendChoice | null = null;

/**
 * tfjs-core registers no gradients itself (the union package does); the trainer differentiates
 * through the model, so register them here. Its ESM build uses directory imports Node's ESM
 * loader refuses, hence require. Same module as trainer/loss/gradients.ts, so it runs once.
 */
function registerGradients(): void {
  require("@tensorflow/tfjs-core/dist/register_all_gradients.js");
}

/**
 * Starts the best available backend. `prefer` ("tfjs-node-gpu", "webgpu", "tfjs-node", "wasm",
 * "cpu", or the env var CLAWRL_TF_BACKEND) starts the search at that candidate; the ones before
 * it are reported as skipped "not preferred". Idempotent: a second call returns the first choice.
 */
export async function initBackend(prefer?: string, log?: (line: string) => void): Promise<BackendChoice> {
  if (current) return current;
  registerGradients();
  const want = prefer ?? process.env.CLAWRL_TF_BACKEND;
  let start = 0;
  if (want) {
    start = CANDIDATES.findIndex((c) => c.name === want);
    if (start < 0) throw new Error(`unknown tfjs backend "${want}" (one of ${CANDIDATES.map((c) => c.name).join(", ")})`);
  }
  const skipped: BackendChoice["skipped"] = CANDIDATES.slice(0, start).map((c) => ({ name: c.name, why: "not preferred" }));
  for (const c of CANDIDATES.slice(start)) {
    try {
      // Later GPU trouble (device lost, out of memory) goes to the log, or stderr without one.
      const started = await c.start(c.name === want, log ?? ((line) => console.warn(line)));
      current = { name: tf.getBackend(), ...started, skipped };
      for (const s of skipped) log?.(`trainer backend: skipped ${s.name}: ${s.why}`);
      log?.(`trainer backend: ${c.name} on ${started.device}`);
      return current;
    } catch (e) {
      skipped.push({ name: c.name, why: firstLine(e) });
    }
  }
  throw new Error(`no tfjs backend could start: ${skipped.map((s) => `${s.name}: ${s.why}`).join("; ")}`);
}
