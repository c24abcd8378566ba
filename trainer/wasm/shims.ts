/**
 * The runtime shims that let tfjs-backend-wasm's threaded-SIMD build start under plain Node
 * (see ./internals.ts for why it cannot on its own). Installed only while the module starts:
 * installInitShims() replaces four globals and restore() puts every one back.
 *
 *  - globalThis.Blob: a Proxy that records the text of string Blobs (tfjs makes two: the main
 *    script and the pthread worker script) and still returns real Blobs;
 *  - URL.createObjectURL: for a recorded Blob, returns a marker instead of a "blob:" URL;
 *  - globalThis.Worker (an accessor, so Emscripten's `commonjsGlobal.Worker = ...` is ignored):
 *    a worker_threads.Worker that starts the marked worker script as `eval` code, with a
 *    postlude that makes its importScripts evaluate the main script (passed in workerData);
 *  - os.cpus: tfjs's C++ sizes the XNNPACK pool at most at os.cpus().length / 2 ("2 threads
 *    per core"), so a 2-core machine would always get 1 thread: it reports 2 × threads.
 * Nothing is written to disk and nothing in node_modules changes.
 */
import os from "node:os";
import { Worker as NodeWorker, type WorkerOptions } from "node:worker_threads";
import { checkScripts, type EmscriptenWorker, type ThreadedScripts } from "./internals.js";

/** What createObjectURL returns for a recorded Blob, followed by its index. */
const BLOB_URL_MARKER = "clawrl-wasm-threads:blob:";
/** What the worker's URL.createObjectURL returns for the main-script Blob; its importScripts evals workerData. */
const MAIN_SCRIPT_MARKER = "clawrl-wasm-threads:main";

/**
 * Appended to Emscripten's worker script, which has by then put importScripts on the worker's
 * global. The worker gets the main script as a Blob in its "load" message and calls
 * URL.createObjectURL + importScripts on it; both are redirected to workerData.mainScript.
 */
const WORKER_POSTLUDE = `
;(function () {
  var workerData = require("worker_threads").workerData;
  URL.createObjectURL = function () { return ${JSON.stringify(MAIN_SCRIPT_MARKER)}; };
  URL.revokeObjectURL = function () {};
  var readScript = importScripts;
  importScripts = function (f) {
    if (f !== ${JSON.stringify(MAIN_SCRIPT_MARKER)}) return readScript(f);
    (0, eval)(workerData.mainScript + "\\n//# sourceURL=tfjs-backend-wasm-threaded-simd.js");
  };
})();
`;

export interface InitShimOptions {
  /** XNNPACK threads wanted (the os.cpus shim reports twice as many cores). */
  threads: number;
  /**
   * A worker made under the shims failed: its 'error' event, or it exited. Emscripten's own
   * 'error' listener re-throws (which would crash the process from inside emit); its throw is
   * swallowed and this is called instead, also after restore().
   */
  onWorkerFailure(worker: EmscriptenWorker, why: string): void;
  /**
   * The Blobs did not look as ./internals.ts expects (no worker is started then). Also thrown
   * from Emscripten's `new Worker`, which rejects the module's start; reported here in case
   * that throw does not reach the module's promise.
   */
  onMismatch(e: Error): void;
  /** Test-only: code appended to the worker script (fault injection). */
  workerSuffix?: string;
  /** Test-only: rewrites the recorded Blob texts before they are checked. */
  mangleBlobTexts?: (texts: string[]) => string[];
}

export interface InitShims {
  /** Every worker started through the Worker shim, in order. */
  readonly workers: readonly EmscriptenWorker[];
  /** Puts the original globals back; idempotent. Workers already made keep running. */
  restore(): void;
}

function firstLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split("\n")[0] ?? msg;
}

export function installInitShims(o: InitShimOptions): InitShims {
  const g = globalThis as Record<string, unknown>;
  const texts: string[] = [];
  const indexOf = new WeakMap<Blob, number>();
  const workers: EmscriptenWorker[] = [];
  // Checked once, when Emscripten starts its first worker (both Blobs exist by then).
  let scripts: ThreadedScripts | null = null;

  const OrigBlob = globalThis.Blob;
  const RecordingBlob = new Proxy(OrigBlob, {
    construct(target, args: ConstructorParameters<typeof Blob>, newTarget) {
      const blob = Reflect.construct(target, args, newTarget) as Blob;
      const parts = args[0];
      if (Array.isArray(parts) && parts.every((p) => typeof p === "string")) {
        indexOf.set(blob, texts.length);
        texts.push(parts.join(""));
      }
      return blob;
    },
  });

  // eslint-disable-next-line @typescript-eslint/unbound-method -- kept as is to be put back below, and called with URL as `this`
  const origCreateObjectURL = URL.createObjectURL;
  const markObjectURL = (obj: Blob): string => {
    const i = indexOf.get(obj);
    return i === undefined ? origCreateObjectURL.call(URL, obj) : BLOB_URL_MARKER + i;
  };

  class ShimWorker extends NodeWorker {
    constructor(file: string | URL, options?: WorkerOptions) {
      if (typeof file === "string" && file.startsWith(BLOB_URL_MARKER)) {
        const seen = o.mangleBlobTexts ? o.mangleBlobTexts([...texts]) : texts;
        try {
          scripts ??= checkScripts(seen, seen[Number(file.slice(BLOB_URL_MARKER.length))] ?? "");
        } catch (e) {
          o.onMismatch(e as Error);
          throw e;
        }
        super(scripts.worker + WORKER_POSTLUDE + (o.workerSuffix ?? ""), {
          ...options,
          eval: true,
          workerData: { mainScript: scripts.main },
          // The parent's flags (e.g. --import tsx) only slow the workers' start.
          execArgv: [],
        });
      } else {
        super(file, options);
      }
      workers.push(this);
      super.on("error", (e: unknown) => o.onWorkerFailure(this, `a pthread worker failed: ${firstLine(e)}`));
      super.on("exit", (code: number) => o.onWorkerFailure(this, `a pthread worker exited (code ${code})`));
    }

    // Emscripten's 'error' listener throws ("worker sent an error!"); our own listener above
    // reports the failure instead. Method syntax: the base class's overloads take `any`.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the listener type of Worker.on's overloads, which this overrides
    override on(event: string | symbol, listener: (...args: any[]) => void): this {
      if (event !== "error") return super.on(event, listener);
      return super.on(event, (...args: unknown[]) => {
        try {
          listener(...args);
        } catch {
          // reported through onWorkerFailure
        }
      });
    }
  }

  const origCpus = os.cpus;
  const doubledCpus = (): os.CpuInfo[] => {
    const real = origCpus.call(os);
    return Array.from({ length: 2 * o.threads }, (_, i) => real[i % Math.max(1, real.length)]);
  };

  const workerDescriptor = Object.getOwnPropertyDescriptor(g, "Worker");
  os.cpus = doubledCpus;
  g.Blob = RecordingBlob;
  URL.createObjectURL = markObjectURL;
  Object.defineProperty(g, "Worker", { configurable: true, get: () => ShimWorker, set: () => {} });

  let restored = false;
  return {
    workers,
    restore() {
      if (restored) return;
      restored = true;
      if (os.cpus === doubledCpus) os.cpus = origCpus;
      if (g.Blob === RecordingBlob) g.Blob = OrigBlob;
      if (URL.createObjectURL === markObjectURL) URL.createObjectURL = origCreateObjectURL;
      if (workerDescriptor) Object.defineProperty(g, "Worker", workerDescriptor);
      else delete g.Worker;
      texts.length = 0;
    },
  };
}
