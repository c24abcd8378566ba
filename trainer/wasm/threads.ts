/**
 * Starts tfjs-backend-wasm for the trainer: its threaded-SIMD build (XNNPACK on `threads`
 * threads, pthreads as worker_threads) when more than one thread is wanted, else, or when
 * anything about the threaded start goes wrong, the stock single-threaded SIMD build, with the
 * reason. The threaded start runs through init-time shims (./shims.ts) and depends on tfjs
 * internals listed and checked in ./internals.ts.
 *
 * Never hangs, never leaves a broken backend behind:
 *  - Emscripten resolves the module only once all POOL_SIZE pool workers have loaded it; the
 *    start races that against any worker failing and a time limit. Only then does BackendWasm's
 *    constructor (synchronous) create the XNNPACK pool, spawning threads − 1 pthreads on the
 *    already-loaded workers and blocking the main thread until they check in. XNNPACK's cap (8)
 *    is the pool size, so no pthread ever needs a fresh, unloaded worker (whose "loaded" message
 *    would need the blocked main thread: a deadlock).
 *  - On failure every worker started is terminated and the thread count set back to 1 (if the
 *    abandoned module still resolves, its constructor then spawns no pthread on a dead worker);
 *    the half-built backend is never disposed (its dispose would wait on those threads), and the
 *    stock factory is registered again before the single-threaded build starts.
 *  - Once up, the threaded backend is checked: getThreadsCount() and an exact small matMul.
 *  - The single-threaded start has a time limit too (see SINGLE_INIT_TIMEOUT_MS).
 *  - The pool's spare workers are terminated and the running ones unref()'d (XNNPACK's threads
 *    never end), so the process can still exit on its own.
 * After the start, an XNNPACK worker that fails or exits would make the next parallel op wait
 * forever; that is turned into an uncaught error (the trainer process exits, and the app's
 * supervisor restarts it) rather than a hang.
 */
import path from "node:path";
import { createRequire } from "node:module";
import * as tf from "@tensorflow/tfjs-core";
import {
  InternalsMismatch,
  MAIN_SCRIPT_PREFIX,
  POOL_SIZE,
  backendInitialised,
  checkVersion,
  pthreadsOf,
  registeredFactory,
  type BackendWasmLike,
  type EmscriptenWorker,
} from "./internals.js";
import { installInitShims } from "./shims.js";

const require = createRequire(import.meta.url);

type WasmPackage = typeof import("@tensorflow/tfjs-backend-wasm");

/** XNNPACK's thread cap in this build (the pthread pool size). */
export const MAX_WASM_THREADS = POOL_SIZE;

/** Default time for the threaded module and its pool workers to load (measured: 0.2–1.5 s). */
const DEFAULT_INIT_TIMEOUT_MS = 20_000;
/**
 * Time for the single-threaded build: Emscripten rejects a failed start, but nothing else bounds
 * it (reading and compiling the .wasm), and past this the trainer is better off on the next
 * backend (plain JS) than waiting.
 */
const SINGLE_INIT_TIMEOUT_MS = 60_000;

export interface WasmStarted {
  /** WebAssembly SIMD in use. */
  simd: boolean;
  /** Threads asked for (callers included). */
  wanted: number;
  /** XNNPACK threads in use: wasm.getThreadsCount(). */
  threads: number;
  /** Why the threaded build is not in use although more than one thread was wanted. */
  why?: string;
}

export interface WasmStartOptions {
  /** XNNPACK threads wanted, the calling thread included; 1: the single-threaded build. */
  threads: number;
  /** For runtime trouble after the start (a pthread worker died). */
  log?: (line: string) => void;
}

// Test-only fault injection (test/trainer/wasm-threads.test.ts): its child sets the hooks
// explicitly (setWasmThreadsTestHooks) before the backend starts; nothing else does, and no
// environment variable or test flag switches them on.
export const WASM_THREADS_FAULTS = ["worker-throw", "worker-silent", "worker-exit", "after-ready", "internals"] as const;
type Fault = (typeof WASM_THREADS_FAULTS)[number];

/** Worker-script suffixes: wrap the "load" handler Emscripten's worker script installs. */
const WORKER_FAULTS: Partial<Record<Fault, string>> = {
  "worker-throw": 'var h = self.onmessage; self.onmessage = function (e) { if (e.data.cmd === "load") throw new Error("injected test fault"); h(e); };',
  "worker-silent": 'var h = self.onmessage; self.onmessage = function (e) { if (e.data.cmd !== "load") h(e); };',
  "worker-exit": 'var h = self.onmessage; self.onmessage = function (e) { if (e.data.cmd === "load") process.exit(3); h(e); };',
};

export interface WasmThreadsTestHooks {
  /** A failure to inject into the threaded start. */
  fault?: Fault;
  /** The threaded start's time limit, shorter than the real one. */
  timeoutMs?: number;
}

let testHookValues: WasmThreadsTestHooks = {};

/** Tests only: faults and a time limit for the next threaded start. */
export function setWasmThreadsTestHooks(hooks: WasmThreadsTestHooks): void {
  testHookValues = { ...hooks };
}

function testHooks(): WasmThreadsTestHooks {
  return testHookValues;
}

function firstLine(e: unknown): string {
  // Emscripten's abort rejects with a plain { message } object.
  const msg = e instanceof Error ? e.message : typeof (e as { message?: unknown })?.message === "string" ? (e as { message: string }).message : String(e);
  return msg.split("\n")[0] ?? msg;
}

async function activate(): Promise<void> {
  const ok = await tf.setBackend("wasm");
  if (!ok || tf.getBackend() !== "wasm") throw new Error('tfjs could not initialise backend "wasm"');
  await tf.ready();
}

/** Rejects when `p` has not settled within `ms` (what it was doing goes on, unobserved). */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not start within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Exact small matMul against plain JS (integers: any summation order is exact in float32). */
function checkMatMul(): void {
  const m = 33,
    k = 70,
    n = 65; // odd sizes, several XNNPACK tiles each way
  const a = Float32Array.from({ length: m * k }, (_, i) => ((i * 7) % 13) - 6);
  const b = Float32Array.from({ length: k * n }, (_, i) => ((i * 5) % 11) - 5);
  const got = tf.tidy(() => tf.matMul(tf.tensor2d(a, [m, k]), tf.tensor2d(b, [k, n])).dataSync());
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += a[i * k + t] * b[t * n + j];
      if (got[i * n + j] !== s) throw new Error(`threaded matMul check failed: [${i},${j}] = ${got[i * n + j]}, want ${s}`);
    }
  }
}

/**
 * Imports tfjs-backend-wasm and makes "wasm" the active backend, threaded if `threads` > 1 and
 * possible. Call it before anything else initialises the wasm backend. Throws only if the
 * single-threaded build cannot start either.
 */
export async function startWasm(o: WasmStartOptions): Promise<WasmStarted> {
  const wasm = await import("@tensorflow/tfjs-backend-wasm");
  // The .wasm binaries ship next to the package's dist; without a path tfjs would try to
  // fetch them relative to a page URL, which does not exist under Node.
  const dir = path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm"));
  wasm.setWasmPaths(dir + path.sep);
  const simd = Boolean(await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"));
  const wanted = Math.max(1, Math.min(MAX_WASM_THREADS, Math.floor(o.threads)));
  const log = o.log ?? (() => {});

  let why: string | undefined;
  if (wanted > 1) {
    if (!simd) why = "no WebAssembly SIMD (the threaded build needs it)";
    else if (typeof SharedArrayBuffer === "undefined" || typeof Atomics === "undefined") why = "no SharedArrayBuffer";
    else {
      try {
        const threads = await startThreaded(wasm, wanted, log);
        return { simd, wanted, threads };
      } catch (e) {
        why = firstLine(e);
      }
    }
  }
  tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
  wasm.setThreadsCount(1);
  await within(activate(), SINGLE_INIT_TIMEOUT_MS, "the single-threaded wasm build");
  return { simd, wanted, threads: wasm.getThreadsCount(), ...(why ? { why } : {}) };
}

type Phase = "starting" | "running" | "abandoned" | "disposed";

async function startThreaded(wasm: WasmPackage, threads: number, log: (line: string) => void): Promise<number> {
  const hooks = testHooks();
  checkVersion(wasm.version_wasm);
  const engine = tf.engine();
  if (backendInitialised(engine, "wasm")) throw new Error("the wasm backend was already started");
  const stock = registeredFactory(engine, "wasm");
  if (!stock) throw new Error("the wasm backend is not registered");

  let phase: Phase = "starting";
  const stopped = new Set<EmscriptenWorker>(); // terminated on purpose
  // Asserted, not annotated: set from callbacks, so the narrowing to null here must not stick.
  let failure = null as Error | null;
  let reject: (e: Error) => void = () => {};
  const failed = new Promise<never>((_, r) => {
    reject = r;
  });
  const fail = (e: Error): void => {
    failure ??= e;
    reject(e);
  };
  failed.catch(() => {});

  const shims = installInitShims({
    threads,
    onWorkerFailure(worker, why) {
      if (stopped.has(worker)) return;
      if (phase === "starting") fail(new Error(why));
      else if (phase === "running") {
        const e = new Error(`trainer backend: wasm: ${why}; the XNNPACK thread it ran is gone and wasm ops would wait for it forever`);
        log(e.message);
        throw e;
      }
    },
    onMismatch: (e) => fail(e),
    workerSuffix: hooks.fault ? WORKER_FAULTS[hooks.fault] : undefined,
    // Stands for a tfjs release whose main-script Blob is made differently.
    mangleBlobTexts: hooks.fault === "internals" ? (texts) => texts.map((t) => t.replace(MAIN_SCRIPT_PREFIX, "var WasmModule = ")) : undefined,
  });
  const stop = (w: EmscriptenWorker): void => {
    stopped.add(w);
    void w.terminate();
  };

  const timeoutMs = hooks.timeoutMs ?? DEFAULT_INIT_TIMEOUT_MS;
  let backend: BackendWasmLike | null = null;
  try {
    tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", true);
    wasm.setThreadsCount(threads);
    // The stock factory: init() (module + pool) then new BackendWasm(module), called here
    // rather than through the engine so that a start given up on leaves the engine untouched.
    const pending = Promise.resolve().then(() => stock.factory()) as Promise<BackendWasmLike>;
    pending.catch(() => {});
    backend = await within(Promise.race([pending, failed]), timeoutMs, "the threaded module");
    shims.restore();
    if (shims.workers.length === 0) throw new InternalsMismatch("the threaded module started no worker through the shims");
    const started: BackendWasmLike = backend;
    const dispose = started.dispose.bind(started);
    started.dispose = () => {
      phase = "disposed"; // its pthread workers are terminated now
      dispose();
    };

    const pthreads = pthreadsOf(started);
    // XNNPACK made its threads in the constructor and never makes more: free the spare workers.
    for (const w of pthreads.unusedWorkers) stop(w);
    pthreads.unusedWorkers = [];
    // Emscripten ref()s a worker while its pthread runs; XNNPACK's never end.
    for (const w of pthreads.runningWorkers) w.unref();

    tf.removeBackend("wasm");
    tf.registerBackend("wasm", () => started, stock.priority);
    await activate();
    if (failure) throw failure; // a worker failed after the module resolved
    phase = "running";
    const n = wasm.getThreadsCount();
    if (n !== threads) throw new Error(`XNNPACK runs ${n} threads, ${threads} asked for`);
    checkMatMul();
    if (hooks.fault === "after-ready") throw new Error("injected test fault after the threaded backend was up");
    return n;
  } catch (e) {
    phase = "abandoned";
    for (const w of shims.workers) stop(w);
    wasm.setThreadsCount(1);
    // Never dispose the half-built backend: it would wait on the terminated threads.
    if (backend) backend.dispose = () => {};
    if (registeredFactory(engine, "wasm")?.factory !== stock.factory) {
      tf.removeBackend("wasm");
      tf.registerBackend("wasm", stock.factory, stock.priority);
    }
    throw e;
  } finally {
    shims.restore();
  }
}
