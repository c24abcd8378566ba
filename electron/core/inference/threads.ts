/**
 * CPU threads for a model's evaluation when the user set none. A small model's per-token work
 * is too little to split across threads: extra threads only add barrier waits, and when the
 * cores are busy (the trainer runs beside serving) llama.cpp's spinning workers starve each
 * other. Measured on a 2-core machine with other jobs running: stories260K (1 MB) took
 * 25–77 s per 48-token answer with the default thread count and 0.1 s with one thread.
 */
export const SINGLE_THREAD_BELOW_BYTES = 64 * 1024 * 1024;

/** undefined = node-llama-cpp's default (all math cores). */
export function defaultThreads(modelBytes: number): number | undefined {
  return modelBytes < SINGLE_THREAD_BELOW_BYTES ? 1 : undefined;
}
