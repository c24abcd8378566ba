/**
 * Requests and results of the doctor's trainer probes (./*Probe.ts, children the doctor starts
 * by path: electron/core/doctor/run.ts PROBE_SCRIPTS), checked on both sides of the process
 * boundary. The doctor imports this file; the probes read a request and answer over
 * common/probeChild.ts. Kept apart from the probes: importing a probe module starts its child main.
 */
import { z } from "zod";

/** One measured matMul size of a trainer backend (a row of the doctor report's training section). */
export const matmulRowSchema = z.object({
  n: z.number().int().positive(),
  /** null: left out (one product would take too long on this backend). */
  gflops: z.number().positive().nullable(),
  note: z.string().nullable(),
});

export const webgpuAdaptersRequestSchema = z.object({ allowSoftware: z.boolean() });
export const webgpuAdaptersResultSchema = z.object({
  name: z.string(),
  description: z.string(),
  vendor: z.string(),
  backend: z.string(),
  software: z.string().nullable(),
  maxBufferSize: z.number(),
  maxStorageBufferBindingSize: z.number(),
});

export const TRAINER_BACKENDS = ["tfjs-node-gpu", "webgpu", "tfjs-node", "wasm", "cpu"] as const;
export type TrainerBackend = (typeof TRAINER_BACKENDS)[number];

export const matmulRequestSchema = z.object({
  backend: z.enum(TRAINER_BACKENDS),
  /** webgpu asked for by name: a software adapter is taken. */
  explicit: z.boolean(),
  sizes: z.array(z.number().int().positive()),
  /** Seconds of products per size (after one warm-up product). */
  seconds: z.number().positive(),
  /** A size is left out when one product of it is predicted (from the size before, by n³) to take longer than this. */
  maxProductSeconds: z.number().positive(),
});
export type MatmulRequest = z.infer<typeof matmulRequestSchema>;

/** What the plan needs to know of a started backend (models/plan/available.ts backendMemory). */
export const backendFactsSchema = z.object({
  name: z.string(),
  device: z.string(),
  memoryBytes: z.number().optional(),
  wasmHeapLimitBytes: z.number().optional(),
  webgpu: webgpuAdaptersResultSchema.extend({ architecture: z.string(), device: z.string() }).optional(),
});

export const matmulResultSchema = z.object({ device: z.string(), facts: backendFactsSchema, matmul: z.array(matmulRowSchema) });
export type MatmulResult = z.infer<typeof matmulResultSchema>;

export const trainRequestSchema = z.object({
  backend: z.enum(TRAINER_BACKENDS),
  modelPath: z.string(),
  shape: z.string(),
  batch: z.number().int().positive(),
  context: z.number().int().min(8),
  /** Measured steps, after one warm-up step (0: the warm-up step is the measurement). */
  steps: z.number().int().nonnegative(),
  rank: z.number().int().positive(),
});
export type TrainRequest = z.infer<typeof trainRequestSchema>;

export const trainResultSchema = z.object({
  backend: z.string(),
  device: z.string(),
  loadSeconds: z.number(),
  stepSeconds: z.number().positive(),
  steps: z.number().int().positive(),
  trainedTokensPerStep: z.number().int().positive(),
  flopsPerStep: z.number().positive(),
  placement: z.string(),
  peakRssBytes: z.number(),
  /** The frozen weights' products ran natively (trainer/native/gemm.ts): its ISA; null: on the backend. */
  nativeProducts: z.string().nullable().default(null),
});
export type TrainResult = z.infer<typeof trainResultSchema>;
