/**
 * Everything the threaded wasm start (./threads.ts) relies on inside @tensorflow/tfjs-backend-wasm
 * 4.22.0 and @tensorflow/tfjs-core, in one place. None of it is public API, so each assumption
 * is either checked here (a mismatch throws InternalsMismatch, and the trainer falls back to the
 * stock single-threaded build with the reason) or guarded by the init timeout in ./threads.ts.
 *
 * What the Node bundle (dist/tf-backend-wasm.node.js) does, and why it needs help under Node:
 *  - the flag WASM_HAS_MULTITHREAD_SUPPORT is false whenever IS_NODE; we set it to true;
 *  - init() hands Emscripten the pthread worker script as a Blob URL (locateFile of
 *    "*.worker.js": `new Blob([wasmWorkerContents])`, then URL.createObjectURL) and the main
 *    script as a Blob (mainScriptUrlOrBlob = `new Blob([MAIN_SCRIPT_PREFIX +
 *    wasmFactoryThreadedSimd.toString()])`). Node's worker_threads.Worker cannot start from a
 *    "blob:" URL, and the worker's importScripts (fs.readFileSync + eval) cannot read one;
 *  - the main script is a function cut out of a rollup bundle: it still refers to names the
 *    bundle defines at top level (BUNDLE_NAMES below), which do not exist where a worker evals it;
 *  - Emscripten preloads a fixed pool of POOL_SIZE workers (PThread.initMainThread) and resolves
 *    the module once all have loaded; BackendWasm's constructor then calls
 *    init_with_threads_count, which creates the XNNPACK pool of min(threads, 8, cores / 2)
 *    threads, `cores` being emscripten_num_logical_cores() = os.cpus().length under Node, read
 *    once by a global constructor while the module instantiates.
 */
import type * as tf from "@tensorflow/tfjs-core";
import type { Worker as NodeWorker } from "node:worker_threads";

/** The only version these internals were read from and tested with. */
export const TESTED_VERSION = "4.22.0";

/** Emscripten's pthread pool in the threaded-SIMD build; also XNNPACK's thread cap there. */
export const POOL_SIZE = 8;

/** How init() starts the text of the main-script Blob. */
export const MAIN_SCRIPT_PREFIX = "var WasmBackendModuleThreadedSimd = ";

/**
 * Pieces of the pthread worker script that the worker postlude (./threads.ts) hooks: it loads
 * the main script from the "load" message's urlOrBlob through URL.createObjectURL and
 * importScripts, then calls the factory. If any is missing, the hook would not take effect.
 */
export const WORKER_SCRIPT_NEEDS = [
  'e.data.cmd==="load"',
  "var objectUrl=URL.createObjectURL(e.data.urlOrBlob)",
  "importScripts(objectUrl)",
  "WasmBackendModuleThreadedSimd(Module)",
  'require("worker_threads")',
] as const;

/**
 * Top-level names of the rollup bundle that the cut-out factory refers to, with a definition
 * each for the worker's global scope. require$$N are the bundle's Node built-in imports
 * (`var require$$0 = require('fs');` ... in 4.22.0; require$$2 is not used by the factory); the
 * three tslib helpers are used by Emscripten's PThread code; _scriptDir is a variable of the
 * factory's enclosing IIFE (a pthread worker needs no script directory: the wasm module and
 * memory come in its "load" message).
 */
export const BUNDLE_NAMES: Readonly<Record<string, string>> = {
  commonjsGlobal: "var commonjsGlobal = globalThis;",
  require$$0: 'var require$$0 = require("fs");',
  require$$1: 'var require$$1 = require("path");',
  require$$3: 'var require$$3 = require("perf_hooks");',
  require$$4: 'var require$$4 = require("os");',
  _scriptDir: "var _scriptDir = undefined;",
  // Same behaviour as tslib's helpers for what the factory passes them (arrays, Object.values).
  __values: "function __values(o) { return o[Symbol.iterator](); }",
  __read: "function __read(o, n) { var a = Array.from(o); return n === undefined ? a : a.slice(0, n); }",
  __spreadArray: "function __spreadArray(to, from) { return to.concat(Array.prototype.slice.call(from)); }",
};

/**
 * Names of the kinds a bundler or tslib puts at a bundle's top level: if the factory refers to
 * one BUNDLE_NAMES does not define, a pthread worker would fail on it (ReferenceError).
 * A lookbehind keeps out properties (`Module.__x`, `Module["__x"]`); Emscripten's own
 * `__ATINIT__`, `__emscripten_*` and Node's `__dirname` / `__filename` are not of these kinds.
 */
const BUNDLE_NAME_PATTERN =
  /(?<![.\w$"'])(require\$\$\d+|commonjs\w+|getDefaultExportFromCjs|getAugmentedNamespace|_mergeNamespaces|_scriptDir|__(?:extends|assign|rest|decorate|param|metadata|awaiter|generator|exportStar|createBinding|values|read|spread\w*|await|async\w*|makeTemplateObject|import\w*|classPrivate\w*|esDecorate|runInitializers|propKey|setFunctionName|addDisposableResource|disposeResources))(?![\w$"'])/g;

/** An assumption about tfjs internals does not hold: use the single-threaded build. */
export class InternalsMismatch extends Error {
  constructor(what: string) {
    super(`tfjs-backend-wasm internals differ from ${TESTED_VERSION}: ${what}`);
    this.name = "InternalsMismatch";
  }
}

export function checkVersion(version: string): void {
  if (version !== TESTED_VERSION) throw new InternalsMismatch(`installed version is ${version}`);
}

/** The two scripts Emscripten gets as Blobs, checked; what the worker must evaluate first. */
export interface ThreadedScripts {
  /** Emscripten's pthread worker script (wasmWorkerContents). */
  worker: string;
  /** "var WasmBackendModuleThreadedSimd = function ...", prefixed with the bundle names it uses. */
  main: string;
}

/**
 * From the texts of the Blobs created while the module starts, picks and checks the main
 * script and the worker script (`workerText`: the one whose URL Emscripten passed to Worker).
 */
export function checkScripts(blobTexts: readonly string[], workerText: string): ThreadedScripts {
  const main = blobTexts.find((t) => t.startsWith(MAIN_SCRIPT_PREFIX));
  if (main === undefined) throw new InternalsMismatch(`no main-script Blob starting "${MAIN_SCRIPT_PREFIX.trim()}"`);
  const missing = WORKER_SCRIPT_NEEDS.filter((s) => !workerText.includes(s));
  if (missing.length) throw new InternalsMismatch(`pthread worker script lacks ${missing.map((s) => JSON.stringify(s)).join(", ")}`);
  const used = new Set(Array.from(main.matchAll(BUNDLE_NAME_PATTERN), (m) => m[1]));
  const unknown = [...used].filter((n) => !(n in BUNDLE_NAMES));
  if (unknown.length) throw new InternalsMismatch(`main script refers to bundle names ${unknown.join(", ")}`);
  const prelude = [...used].sort().map((n) => BUNDLE_NAMES[n]);
  return { worker: workerText, main: prelude.join("\n") + "\n" + main };
}

/** What Emscripten adds to a pthread worker (a worker_threads.Worker under Node). */
export interface EmscriptenWorker extends NodeWorker {
  loaded?: boolean;
  pthread_ptr?: number;
}

/** The parts of the Emscripten module (BackendWasm.wasm) used here. */
export interface EmscriptenThreadedModule {
  PThread?: { unusedWorkers: EmscriptenWorker[]; runningWorkers: EmscriptenWorker[] };
  HEAPU8?: Uint8Array;
}

/** tfjs-backend-wasm's BackendWasm, as far as used here. */
export interface BackendWasmLike extends tf.KernelBackend {
  wasm: EmscriptenThreadedModule;
}

/** tfjs-core's Engine fields read here: initialised backends and registered factories. */
interface EngineInternals {
  registry: Record<string, tf.KernelBackend | undefined>;
  registryFactory: Record<string, { factory: () => tf.KernelBackend | Promise<tf.KernelBackend>; priority: number } | undefined>;
}

function engineInternals(engine: unknown): EngineInternals {
  const e = engine as Partial<EngineInternals>;
  if (typeof e.registry !== "object" || e.registry === null || typeof e.registryFactory !== "object" || e.registryFactory === null) {
    throw new InternalsMismatch("tfjs-core's engine has no registry / registryFactory");
  }
  return e as EngineInternals;
}

/** Whether the engine already holds an initialised backend of this name (tf.findBackend would start one). */
export function backendInitialised(engine: unknown, name: string): boolean {
  return engineInternals(engine).registry[name] !== undefined;
}

/** The factory currently registered for a backend name. */
export function registeredFactory(engine: unknown, name: string): EngineInternals["registryFactory"][string] {
  return engineInternals(engine).registryFactory[name];
}

/** The module's heap size now (Emscripten grows it, never shrinks it); null if it cannot be read. */
export function heapBytesOf(backend: BackendWasmLike): number | null {
  return backend.wasm?.HEAPU8?.buffer.byteLength ?? null;
}

/** The Emscripten PThread object of a started threaded backend. */
export function pthreadsOf(backend: BackendWasmLike): NonNullable<EmscriptenThreadedModule["PThread"]> {
  const p = backend.wasm?.PThread;
  if (!p || !Array.isArray(p.unusedWorkers) || !Array.isArray(p.runningWorkers)) {
    throw new InternalsMismatch("the started module has no PThread.unusedWorkers / runningWorkers");
  }
  return p;
}
