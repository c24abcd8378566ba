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
 */
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import * as tf from "@tensorflow/tfjs-core";
import type { AdapterSummary } from "./webgpu/dawn.js";
import { startWebGpu } from "./webgpu/start.js";

// webgpu keeps every freed GPU buffer for reuse; the trainer may give them back between steps.
export { releaseFreeGpuBuffers } from "./webgpu/start.js";

/** The wasm backend's heap is one 32-bit WebAssembly memory (Emscripten's getHeapMax). */
export const WASM_HEAP_LIMIT_BYTES = 4294901760;

export interface BackendChoice {
  /** tfjs backend name now active: "tensorflow", "webgpu", "wasm" or "cpu". */
  name: string;
  /** Human-readable device: "cuda", "webgpu (NVIDIA H100, vulkan)", "native cpu", "wasm (simd)", "js cpu". */
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
}

type Started = Pick<BackendChoice, "device" | "memoryBytes" | "wasmHeapLimitBytes" | "webgpu">;

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
    async start() {
      const wasm = await import("@tensorflow/tfjs-backend-wasm");
      // The .wasm binaries ship next to the package's dist; without a path tfjs would try to
      // fetch them relative to a page URL, which does not exist under Node.
      const dir = path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm"));
      wasm.setWasmPaths(dir + path.sep);
      // The Emscripten runtime installs process handlers that re-throw every uncaught error
      // from inside its one-line, 30 kB loader, so Node prints that whole line with any crash.
      // Remove them: Node's default handling is what we want.
      const before = processHandlers();
      try {
        await activate("wasm");
      } finally {
        removeHandlersAddedSince(before);
      }
      const simd = Boolean(await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"));
      const threads = Boolean(await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT"));
      const features = [simd ? "simd" : "no simd", threads ? `${wasm.getThreadsCount()} threads` : "1 thread"];
      return {
        device: `wasm (${features.join(", ")})`,
        memoryBytes: Math.min(os.totalmem(), WASM_HEAP_LIMIT_BYTES),
        wasmHeapLimitBytes: WASM_HEAP_LIMIT_BYTES,
      };
    },
  },
  {
    name: "cpu",
    async start() {
      await import("@tensorflow/tfjs-backend-cpu");
      await activate("cpu");
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
