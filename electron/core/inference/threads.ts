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

/**
 * The serving context's thread claim: all of its threads, never a share. node-llama-cpp splits
 * `maxThreads` between the contexts that have work queued, in proportion to what each wants, and
 * takes a plain number as "ideal, at least 1": when chat's prompt arrived while the gate's probe
 * (or the judge) had a batch in flight, chat's prefill was handed 1 of 2 threads, and its first
 * token took 2–3× idle (bench/probe-ttft.ts on the 0.5B shape, issue 31). With `min` at its
 * whole count, chat waits for the batch in flight to end (the probe and the judge then give way
 * to it) and evaluates on every thread.
 */
export function servingThreads(threads: number | undefined, llama: { maxThreads: number; cpuMathCores: number }): { ideal: number; min: number } {
  const n = Math.max(1, threads ?? (llama.maxThreads === 0 ? llama.cpuMathCores : llama.maxThreads));
  return { ideal: n, min: n };
}
