/**
 * Child process of backend-webgpu.test.ts: starts the backend named in argv[2] (or the default
 * pick for "default"), runs the cases named in argv[3] (comma-separated: choice, ops, grads,
 * matmul, memory, syncRead, gpuError, deviceLost: last, it destroys the device) and prints one
 * JSON line. One process per backend: tfjs keeps one
 * engine per process.
 */
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { gradCases, matmulCase, memoryTrace, opCases } from "./webgpu-cases.js";

const [prefer, what = "choice"] = process.argv.slice(2);
const lines: string[] = [];
const out: Record<string, unknown> = {};
try {
  out.choice = await initBackend(prefer === "default" ? undefined : prefer, (l) => lines.push(l));
  out.lines = lines;
  out.active = tf.getBackend();
  // webgpu asked for but not started: only the choice (with the reason) matters.
  const cases = prefer === "webgpu" && out.active !== "webgpu" ? [] : what.split(",");
  for (const w of cases) {
    const t0 = performance.now();
    if (w === "ops") out.ops = await opCases();
    else if (w === "grads") out.grads = await gradCases();
    else if (w === "matmul") out.matmul = await matmulCase();
    else if (w === "memory") out.memory = await memoryTrace();
    else if (w === "syncRead") {
      const t = tf.tidy(() => tf.add(tf.tensor1d([1, 2, 3]), 1));
      try {
        out.syncRead = { ok: Array.from(t.dataSync()) };
      } catch (e) {
        out.syncRead = { error: (e as Error).message };
      }
      t.dispose();
    } else if (w === "gpuError") {
      // A command WebGPU refuses (a buffer with no usage): no exception where it is issued,
      // so the next read must fail.
      const before = tf.tidy(() => tf.add(tf.tensor1d([1, 2, 3]), 1));
      const okBefore = Array.from(await before.data());
      (tf.backend() as unknown as { device: { createBuffer(d: { size: number; usage: number }): unknown } }).device.createBuffer({ size: 4, usage: 0 });
      const after = tf.tidy(() => tf.add(tf.tensor1d([1, 2, 3]), 2));
      try {
        out.gpuError = { okBefore, after: Array.from(await after.data()) };
      } catch (e) {
        out.gpuError = { okBefore, error: (e as Error).message };
      }
      tf.dispose([before, after]);
    } else if (w === "deviceLost") {
      (tf.backend() as unknown as { device: { destroy(): void } }).device.destroy();
      const t = tf.tidy(() => tf.add(tf.tensor1d([1, 2, 3]), 3));
      try {
        out.deviceLost = { after: Array.from(await t.data()) };
      } catch (e) {
        out.deviceLost = { error: (e as Error).message };
      }
    } else if (w !== "choice") throw new Error(`unknown case ${w}`);
    const ms = (out.ms ??= {}) as Record<string, number>;
    ms[w] = Math.round(performance.now() - t0);
  }
} catch (e) {
  out.error = (e as Error).stack ?? String(e);
}
console.log(JSON.stringify(out));
