/**
 * CPU threads for a model's evaluation when the user set none. A small model's per-token work
 * is too little to split across threads: extra threads only add barrier waits, and when the
 * cores are busy (the trainer runs beside serving) llama.cpp's spinning workers starve each
 * other. Measured on a 2-core machine with other jobs running: stories260K (1 MB) took
 * 25–77 s per 48-token answer with the default thread count and 0.1 s with one thread.
 */
export const SINGLE_THREAD_BELOW_BYTES = 64 * 1024 * 1024;

/** undefined = the Llama's default: its maxThreads, which capCpuThreads sets to the math cores. */
export function defaultThreads(modelBytes: number): number | undefined {
  return modelBytes < SINGLE_THREAD_BELOW_BYTES ? 1 : undefined;
}

/**
 * On the CPU backend, node-llama-cpp lets contexts use max(4, math cores) threads in all: on a
 * 2-core machine each context asks for 4, and llama.cpp's workers, spinning at every barrier
 * for cores they do not have, made a Qwen2.5-0.5B-shaped model decode at 0.3 tokens/s instead
 * of 27 (bench/server-vs-direct.ts; 16 tokens in 45.9 s with the default, 0.83 s with 2). The
 * cap is shared: contexts evaluating at once (chat, judge, the gate's probe) split the math
 * cores between them instead of each taking them all.
 */
export function capCpuThreads(llama: { cpuMathCores: number; maxThreads: number }): void {
  llama.maxThreads = Math.max(1, llama.cpuMathCores);
}
