/**
 * Child process of wasm-threads.test.ts (tfjs keeps one engine per process): starts the wasm
 * backend through initBackend (threads from the environment; the test's faults, named by the
 * parent in CLAWRL_WASM_THREADS_TEST_FAULT / _TIMEOUT_MS, set here as explicit hooks), computes a
 * few products and gradients, and reports them with their exact bits. Prints one JSON line, or
 * sends it when forked, then waits for the parent to disconnect. It never calls process.exit:
 * the process must end on its own. With argv[2] "kill-worker" it instead terminates one of the
 * running XNNPACK workers after the start and then runs a product (which would wait forever).
 */
import * as tf from "@tensorflow/tfjs-core";
import { getThreadsCount } from "@tensorflow/tfjs-backend-wasm";
import { initBackend } from "../../trainer/backend.js";
import { setWasmThreadsTestHooks, WASM_THREADS_FAULTS } from "../../trainer/wasm/threads.js";

{
  const f = process.env.CLAWRL_WASM_THREADS_TEST_FAULT;
  const fault = WASM_THREADS_FAULTS.find((x) => x === f);
  if (f && !fault) throw new Error(`CLAWRL_WASM_THREADS_TEST_FAULT=${f}: not one of ${WASM_THREADS_FAULTS.join(", ")}`);
  const t = Number(process.env.CLAWRL_WASM_THREADS_TEST_TIMEOUT_MS);
  setWasmThreadsTestHooks({ fault, timeoutMs: t > 0 ? t : undefined });
}

/** Deterministic values in [-1, 1), not integers, so summation order would show in the bits. */
function values(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

/** Exact bits of a float32 array (base64 of its bytes). */
function bits(a: Float32Array | Int32Array | Uint8Array): string {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64");
}

const lines: string[] = [];
const out: Record<string, unknown> = {};
try {
  const choice = await initBackend("wasm", (l) => lines.push(l));
  out.choice = choice;
  out.lines = lines;
  out.active = tf.getBackend();
  out.threads = getThreadsCount();
  if (process.argv[2] === "kill-worker") {
    const pthreads = (tf.backend() as unknown as { wasm: { PThread: { runningWorkers: Array<{ terminate(): Promise<number> }> } } }).wasm.PThread;
    console.log(JSON.stringify({ ...out, killing: true, doneAt: Date.now() }));
    void pthreads.runningWorkers[0].terminate();
    setTimeout(() => tf.tidy(() => tf.matMul(tf.ones([256, 512]), tf.ones([512, 512])).dataSync()), 200);
    await new Promise(() => {}); // the process ends on the worker's exit, or hangs (the test's limit)
  }
  const [m, k, n] = [96, 320, 500];
  const x = tf.tensor2d(values(m * k, 1), [m, k]);
  const w = tf.tensor2d(values(k * n, 2), [k, n]);
  const v = tf.tensor2d(values(n * 64, 3), [n, 64]);
  const results: Record<string, string> = {};
  const read = (t: tf.Tensor): string => {
    const b = bits(t.dataSync());
    t.dispose();
    return b;
  };
  results.matMul = read(tf.matMul(x, w));
  // The trainer's form of x·Wᵀ on wasm: (W·xᵀ)ᵀ.
  results.trainerForm = read(tf.tidy(() => tf.transpose(tf.matMul(tf.transpose(w), tf.transpose(x)))));
  // Gradients through two products, a nonlinearity and a softmax.
  const f = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor): tf.Scalar => tf.sum(tf.mul(tf.softmax(tf.matMul(tf.tanh(tf.matMul(a, b)), c)), tf.range(0, 64)));
  const grads = tf.grads(f)([x, w, v]);
  grads.forEach((g, i) => (results[`grad${i}`] = read(g)));
  tf.dispose([x, w, v]);
  out.results = results;
  out.numTensors = tf.memory().numTensors;
} catch (e) {
  out.error = (e as Error).stack ?? String(e);
}
out.doneAt = Date.now();
if (process.send) process.send(out);
else console.log(JSON.stringify(out));
