/**
 * Doctor's trainer-backend probe, a child process (tfjs keeps one engine per process): starts
 * one backend by name and measures f32 matMul GFLOP/s at the requested sizes, products queued
 * and read back once at the end (what a training step does), as bench/webgpu-matmul.ts does.
 */
import * as tf from "@tensorflow/tfjs-core";
import { probeMain } from "../../../common/probeChild.js";
import type { z } from "zod";
import { matmulRequestSchema, type matmulRowSchema, type MatmulResult } from "./protocol.js";
import { isStarted, startTrainerBackend } from "./startBackend.js";

probeMain(matmulRequestSchema, async (req, progress) => {
  const choice = await startTrainerBackend(req.backend, req.explicit);
  if (!isStarted(choice)) return choice;
  await progress(`${req.backend}: started on ${choice.device}`);
  const rows: Array<z.infer<typeof matmulRowSchema>> = [];
  let lastMs = 0;
  let lastN = 0;
  for (const n of req.sizes) {
    const predicted = lastN ? (lastMs * (n / lastN) ** 3) / 1000 : 0;
    if (predicted > req.maxProductSeconds) {
      rows.push({ n, gflops: null, note: `left out: one product would take ~${predicted.toFixed(0)} s` });
      continue;
    }
    const a = tf.randomUniform<tf.Rank.R2>([n, n], -1, 1, "float32", 1);
    const b = tf.randomUniform<tf.Rank.R2>([n, n], -1, 1, "float32", 2);
    await a.data();
    await b.data();
    // Warm-up: compiles the kernel, and sizes the timed run.
    let t0 = performance.now();
    const w = tf.matMul(a, b);
    await w.data();
    w.dispose();
    lastMs = performance.now() - t0;
    lastN = n;
    if (req.backend === "cpu" && lastMs >= req.seconds * 1000) {
      // The plain-JS backend compiles nothing: its slow warm-up product is the measurement.
      // (Elsewhere the warm-up includes compiling the kernel, so a timed product follows.)
      const gflops = (2 * n ** 3) / (lastMs / 1000) / 1e9;
      rows.push({ n, gflops, note: "one product" });
      tf.dispose([a, b]);
      await progress(`${req.backend}: matMul ${n}² ${gflops.toFixed(2)} GFLOP/s (one product)`);
      continue;
    }
    const reps = Math.max(1, Math.min(200, Math.round((req.seconds * 1000) / Math.max(lastMs, 0.01))));
    t0 = performance.now();
    let last: tf.Tensor | null = null;
    for (let i = 0; i < reps; i++) {
      last?.dispose();
      last = tf.matMul(a, b);
    }
    await last!.data();
    last!.dispose();
    const ms = performance.now() - t0;
    // Sizes the next one from a timed product, not the warm-up (shader compiling on a GPU).
    lastMs = ms / reps;
    const gflops = (2 * n ** 3 * reps) / (ms / 1000) / 1e9;
    rows.push({ n, gflops, note: null });
    tf.dispose([a, b]);
    await progress(`${req.backend}: matMul ${n}² ${gflops.toFixed(1)} GFLOP/s`);
  }
  const facts = {
    name: choice.name,
    device: choice.device,
    ...(choice.memoryBytes !== undefined ? { memoryBytes: choice.memoryBytes } : {}),
    ...(choice.wasmHeapLimitBytes !== undefined ? { wasmHeapLimitBytes: choice.wasmHeapLimitBytes } : {}),
    ...(choice.webgpu ? { webgpu: { ...choice.webgpu, description: choice.webgpu.description || choice.webgpu.device } } : {}),
  };
  return { type: "result", data: { device: choice.device, facts, matmul: rows } satisfies MatmulResult };
});
