/**
 * Bounds a node-llama-cpp model load in time. assertLoadableGguf (models/gguf/loadable.ts) is
 * the real defence against a hostile file; this is the second wall for whatever still makes a
 * load hang.
 *
 * The limit, honestly: node-llama-cpp 3.22.1 takes a `loadSignal`, which its GGUF reader checks
 * only before it reads more of the file and llama.cpp checks while loading tensors
 * (abortActiveModelLoad). Its header parser looping over bytes it already holds (as it does for
 * a 2^62 tensor count) checks nothing and cannot be stopped in-process: the promise is then abandoned, the caller gets an error and
 * stays on what it had, and the stray load's memory and CPU are only reclaimed when it ends
 * (its model, if one ever arrives, is disposed at once) or the process exits. Killing it for
 * sure would need the load in a child process, which node-llama-cpp's in-process models cannot
 * be handed across.
 */
import fs from "node:fs";

export class LoadTimeoutError extends Error {
  readonly statusCode = 422;
  constructor(
    readonly what: string,
    readonly ms: number,
  ) {
    super(`loading ${what} did not finish within ${Math.round(ms / 1000)} s; abandoned (the file may be damaged or hostile)`);
    this.name = "LoadTimeoutError";
  }
}

/**
 * How long a load of `file` may take: 60 s plus 1 s per 20 MB (a slow disk), unless
 * CLAWRL_MODEL_LOAD_TIMEOUT_MS says otherwise (tests).
 */
export function loadBoundMs(file: string): number {
  const env = Number(process.env.CLAWRL_MODEL_LOAD_TIMEOUT_MS);
  if (Number.isFinite(env) && env > 0) return env;
  let size = 0;
  try {
    size = fs.statSync(file).size;
  } catch {
    // the load itself will say the file is missing
  }
  return 60_000 + Math.ceil(size / 20_000);
}

/**
 * Runs `start(signal)`; rejects with LoadTimeoutError after `ms` (aborting the signal). A result
 * that arrives after that is handed to `discard` (dispose the late model).
 */
export function loadWithin<T>(what: string, ms: number, start: (signal: AbortSignal) => Promise<T>, discard: (late: T) => unknown): Promise<T> {
  const ac = new AbortController();
  let timedOut = false;
  const load = start(ac.signal);
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new LoadTimeoutError(what, ms));
      reject(new LoadTimeoutError(what, ms));
    }, ms);
    load.then(
      (v) => {
        clearTimeout(timer);
        if (timedOut) {
          void Promise.resolve()
            .then(() => discard(v))
            .catch(() => undefined);
        } else resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        if (!timedOut) reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
