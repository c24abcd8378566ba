/**
 * The report of `clawrl doctor` (electron/core/doctor/run.ts): what this machine can do,
 * measured. The JSON form (`--json`, report.json) is this schema; report.md is rendered from it.
 * Versioned so that bug reports from older builds can still be read. Part of the contract (GET
 * /api/doctor sends it): the doctor (electron/core/doctor/) imports it from here.
 */
import { z } from "zod";
import { matmulRowSchema } from "../../../trainer/entries/doctor/protocol.js";

/**
 * How a probe ended: "ok" (measured), "unavailable" (nothing to run here: no binary, no
 * device), "skipped" (not asked for, or not worth running here), "failed" (it ran and broke:
 * crashed, hung, threw, or gave wrong results).
 */
export const probeStatusSchema = z.enum(["ok", "unavailable", "skipped", "failed"]);
export type ProbeStatus = z.infer<typeof probeStatusSchema>;

/** How a failed probe's child process ended. */
export const childExitSchema = z.object({
  code: z.number().nullable(),
  signal: z.string().nullable(),
  /** The last lines it printed (stderr and stdout), shortened. */
  outputTail: z.string(),
});

/** Every probe run, in order, whatever its section: the raw record behind the rows. */
export const probeRecordSchema = z.object({
  id: z.string(),
  section: z.enum(["machine", "inference", "training"]),
  name: z.string(),
  status: probeStatusSchema,
  reason: z.string().nullable(),
  seconds: z.number().nonnegative(),
  exit: childExitSchema.nullable(),
});

export const gpuRouteSchema = z.object({
  route: z.enum(["cuda", "vulkan", "webgpu"]),
  status: probeStatusSchema,
  reason: z.string().nullable(),
  devices: z.array(z.string()),
  /** NVIDIA kernel driver (cuda), when this machine has one. */
  driver: z.string().nullable(),
  vramTotalBytes: z.number().nonnegative().nullable(),
  /** WebGPU: the adapters Dawn offered, with the limits the trainer plans with. */
  adapters: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      vendor: z.string(),
      backend: z.string(),
      software: z.string().nullable(),
      maxBufferSize: z.number(),
      maxStorageBufferBindingSize: z.number(),
    }),
  ),
});
export type GpuRoute = z.infer<typeof gpuRouteSchema>;

export const machineSchema = z.object({
  cpuModel: z.string(),
  cores: z.number().int().positive(),
  ramTotalBytes: z.number().positive(),
  ramFreeBytes: z.number().nonnegative(),
  os: z.string(),
  node: z.string(),
  /** 1-minute load average when doctor started: figures measured on a busy machine read low. */
  loadAverage: z.number().nonnegative(),
  gpus: z.array(gpuRouteSchema),
});

export const inferenceRunSchema = z.object({
  /** Shape id (models/tiny/shapes.ts) or the file measured (--model). */
  model: z.string(),
  modelBytes: z.number().positive(),
  loadSeconds: z.number().nonnegative(),
  promptTokens: z.number().int().positive(),
  promptTokensPerSecond: z.number().positive(),
  decodeTokens: z.number().int().positive(),
  decodeTokensPerSecond: z.number().positive(),
  gpuLayers: z.number().int().nonnegative(),
  totalLayers: z.number().int().nonnegative().nullable(),
  /** VRAM the load took (GPU backends), and the child's resident memory after decoding. */
  vramUsedBytes: z.number().nonnegative().nullable(),
  rssBytes: z.number().nonnegative(),
  threads: z.number().int().nullable(),
});
export type InferenceRun = z.infer<typeof inferenceRunSchema>;

export const inferenceRowSchema = z.object({
  backend: z.string(),
  status: probeStatusSchema,
  reason: z.string().nullable(),
  devices: z.array(z.string()),
  runs: z.array(inferenceRunSchema),
});

export const matmulSchema = matmulRowSchema;

export const trainingRowSchema = z.object({
  backend: z.string(),
  status: probeStatusSchema,
  reason: z.string().nullable(),
  /** The trainer's device string ("wasm (simd, 2 threads)", "webgpu (NVIDIA H100, vulkan)"). */
  device: z.string().nullable(),
  matmul: z.array(matmulSchema),
  peakGflops: z.number().positive().nullable(),
});

export const trainRunSchema = z.object({
  backend: z.string(),
  device: z.string(),
  shape: z.string(),
  batch: z.number().int().positive(),
  context: z.number().int().positive(),
  steps: z.number().int().positive(),
  /** The figure is the first step's (--quick): it includes kernel set-up and heap growth, so it reads low. */
  firstStepOnly: z.boolean(),
  loadSeconds: z.number().nonnegative(),
  stepSeconds: z.number().positive(),
  trainedTokensPerStep: z.number().int().positive(),
  trainedTokensPerSecond: z.number().positive(),
  gflops: z.number().positive(),
  /** gflops over the same backend's matMul peak measured in this run (null: no peak measured). */
  fractionOfPeak: z.number().nonnegative().nullable(),
  placement: z.string(),
  peakRssBytes: z.number().nonnegative(),
});
export type TrainRun = z.infer<typeof trainRunSchema>;

export const planVerdictSchema = z.object({
  model: z.string(),
  backend: z.string(),
  fits: z.boolean(),
  maxContext: z.number().int().nonnegative(),
  summary: z.string(),
});

export const meaningSchema = z.object({
  /** The largest catalog model that serves here at a usable speed (null: none does). */
  serves: z.object({ model: z.string().nullable(), decodeTokensPerSecond: z.number().nullable(), how: z.string() }),
  /** The largest catalog model that learns here (memory plan fits, a batch in reasonable time). */
  learns: z.object({ model: z.string().nullable(), batchSeconds: z.number().nullable(), how: z.string() }),
  /** One learning cycle with the app's defaults, for the served (or recommended) model. */
  learningCycle: z.object({ model: z.string().nullable(), seconds: z.number().nullable(), how: z.string() }),
  /** The three, as sentences (the CLI prints them). */
  lines: z.array(z.string()).min(3),
});

export const doctorReportSchema = z.object({
  version: z.literal(1),
  createdAt: z.string(),
  mode: z.enum(["quick", "deep"]),
  app: z.string(),
  wallSeconds: z.number().nonnegative(),
  machine: machineSchema,
  inference: z.object({
    rows: z.array(inferenceRowSchema),
    /** The backend the app would pick with the default preference ("auto"), and why. */
    pick: z.object({ backend: z.string().nullable(), why: z.string() }),
  }),
  training: z.object({
    rows: z.array(trainingRowSchema),
    best: z.string().nullable(),
    train: trainRunSchema.nullable(),
    trainReason: z.string().nullable(),
    plan: planVerdictSchema.nullable(),
  }),
  meaning: meaningSchema,
  probes: z.array(probeRecordSchema),
});
export type DoctorReport = z.infer<typeof doctorReportSchema>;
