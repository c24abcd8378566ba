/**
 * The messages between the training supervisor (core process) and the trainer worker (child
 * process), over Node's IPC channel. Both sides validate what they receive with these schemas:
 * a malformed message is a bug worth a clear error, not a silent hang. The core imports this
 * file from trainer/ (imports run core → trainer, never back).
 *
 * Every command carries an `id`; the worker answers it with exactly one final reply (`ready`,
 * `result`, `evaluation`, `loaded`, `verified` or `error`) carrying the same id, and may send
 * `progress` (a training step done) and `work` (how far a long command is) messages with that id
 * before it. Commands run one at a time, in order.
 */
import { z } from "zod";
import { memoryPlanSchema } from "../models/plan/planSummary.js";
import { sampleSchema } from "../models/samples/sample.js";

const id = z.number().int().nonnegative();
const tokenIds = z.array(z.number().int().nonnegative());

/** A token sequence scored from `start` (the first response token) to its end. */
export const scoredSequenceSchema = z.object({ tokens: tokenIds.min(2), start: z.number().int().min(1) }).refine((s) => s.start < s.tokens.length, {
  message: "start must be inside the sequence",
});
export type ScoredSequence = z.infer<typeof scoredSequenceSchema>;

/** The training methods (trainer/loss/advantages.ts says what each trains on). */
export const METHODS = ["binary", "opd", "combined", "topk"] as const;

export const trainSettingsSchema = z.object({
  method: z.enum(METHODS),
  rank: z.number().int().min(1),
  alpha: z.number().positive(),
  lr: z.number().positive(),
  maxContext: z.number().int().min(2),
  teacher: z.enum(["current", "base"]),
  seed: z.number().int().nonnegative(),
  /** tfjs backend to start from (tfjs-node-gpu, webgpu, tfjs-node, wasm, cpu); absent = best available */
  backend: z.string().optional(),
  /**
   * Weight β of the k3 KL to the frozen base model in the loss (trainer/loss/ppo.ts): the anchor
   * that keeps the adapter near the model it started from. Absent = 0 (no anchor).
   */
  klBeta: z.number().min(0).max(100).optional(),
});
export type TrainSettings = z.infer<typeof trainSettingsSchema>;

export const commandSchema = z.discriminatedUnion("type", [
  /** Load the base model once; start from `resumeDir` (a checkpoint dir) or a fresh adapter. */
  z.object({ type: z.literal("init"), id, modelPath: z.string().min(1), settings: trainSettingsSchema, resumeDir: z.string().nullable() }),
  /**
   * Train `steps` updates on `samples` and write the candidate (adapter.gguf, optimizer.bin,
   * metrics.json) into `outDir`, a NEW directory (node-llama-cpp caches adapters per path).
   */
  z.object({
    type: z.literal("train"),
    id,
    runId: z.string().min(1),
    samples: z.array(sampleSchema).min(1),
    steps: z.number().int().min(1),
    lr: z.number().positive(),
    batchSize: z.number().int().min(1),
    outDir: z.string().min(1),
    /** β of the KL to the base for this run (the settings may change between runs); absent = the init settings' */
    klBeta: z.number().min(0).max(100).optional(),
  }),
  /**
   * Compare the candidate now in memory with the serving adapter (`servingAdapter`, null =
   * base model): mean KL(candidate || serving) of the next-token distributions over the scored
   * positions of `prompts`, and mean per-token log-prob of the liked and disliked answers.
   * Also its drift from the base model: mean KL(candidate || base) over `prompts` and over
   * `heldBack` (turns never trained on).
   */
  z.object({
    type: z.literal("evaluate"),
    id,
    runId: z.string().min(1),
    servingAdapter: z.string().nullable(),
    prompts: z.array(scoredSequenceSchema),
    liked: z.array(scoredSequenceSchema),
    disliked: z.array(scoredSequenceSchema),
    heldBack: z.array(scoredSequenceSchema).optional(),
  }),
  /**
   * Score ahead what a run's first step would score with the base model (the KL anchor's
   * reference log-probs and the base rows the gate reuses, trainer/train/passCache.ts), for
   * samples waiting for their run: the warm trainer does it while the user still chats, so the
   * run does not. `klBeta` as the run will send it (0: nothing to score).
   */
  z.object({ type: z.literal("prepare"), id, samples: z.array(sampleSchema).min(1), klBeta: z.number().min(0).max(100).optional() }),
  /** Replace the training state with a checkpoint's (null = a fresh adapter): rollback, rejection. */
  z.object({ type: z.literal("load"), id, dir: z.string().nullable() }),
  /** Read a checkpoint fully (adapter fits the model, optimizer matches) without using it. */
  z.object({ type: z.literal("verify"), id, dir: z.string().min(1) }),
  /** What the trainer holds now: tfjs tensors and bytes, the process's RSS and JS heap. */
  z.object({ type: z.literal("memory"), id }),
  z.object({ type: z.literal("shutdown"), id }),
]);
export type Command = z.infer<typeof commandSchema>;
export type CommandType = Command["type"];

const stepMetricsSchema = z.looseObject({
  step: z.number(),
  loss: z.number(),
  gradNorm: z.number(),
  samples: z.number(),
  trainedTokens: z.number(),
  seconds: z.number(),
});

export { memoryPlanSchema, type MemoryPlanSummary } from "../models/plan/planSummary.js";

const lpCompare = z.object({ candidate: z.number().nullable(), serving: z.number().nullable(), count: z.number().int().nonnegative() });

/** Mean KL(candidate || base model) per token (nats), on recent prompts and on held-back turns; null = nothing to measure. */
const klToBase = z.object({
  recent: z.number().nullable(),
  heldBack: z.number().nullable(),
  recentPositions: z.number().int().nonnegative(),
  heldBackPositions: z.number().int().nonnegative(),
});

export const replySchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready"), id, backend: z.string(), device: z.string(), step: z.number().int().nonnegative(), plan: memoryPlanSchema }),
  z.object({
    type: z.literal("progress"),
    id,
    runId: z.string(),
    step: z.number().int(),
    steps: z.number().int(),
    loss: z.number(),
    optimizerStep: z.number().int(),
  }),
  /**
   * How far a long command is, from the block passes it has run (trainer/train/workMeter.ts), at
   * most once a second: `train` counts in steps (2.4 of 4), `evaluate` in a fraction of its passes (of 1).
   */
  z.object({ type: z.literal("work"), id, done: z.number().nonnegative(), total: z.number().positive() }),
  z.object({
    type: z.literal("result"),
    id,
    runId: z.string(),
    dir: z.string(),
    totalSteps: z.number().int(),
    samples: z.number().int(),
    /** mean loss over this run's steps */
    loss: z.number(),
    steps: z.array(stepMetricsSchema),
  }),
  z.object({
    type: z.literal("evaluation"),
    id,
    runId: z.string(),
    kl: z.number().nullable(),
    positions: z.number().int(),
    liked: lpCompare,
    disliked: lpCompare,
    /** absent from a trainer that predates it */
    klToBase: klToBase.optional(),
    /**
     * The trainer's pass cache (trainer/train/passCache.ts): distinct sequences whose serving or
     * base rows it gave, and the body work it saved (token-blocks: one token through one block).
     * Absent from a trainer that predates it.
     */
    reusedRows: z.number().int().nonnegative().optional(),
    savedTokenBlocks: z.number().nonnegative().optional(),
    seconds: z.number(),
  }),
  /** `prepare` done: samples whose base pass ran now, and those the cache already held. */
  z.object({ type: z.literal("prepared"), id, scored: z.number().int().nonnegative(), cached: z.number().int().nonnegative(), seconds: z.number() }),
  z.object({ type: z.literal("loaded"), id, dir: z.string().nullable(), step: z.number().int() }),
  z.object({ type: z.literal("verified"), id, dir: z.string(), ok: z.boolean(), error: z.string().nullable() }),
  z.object({
    type: z.literal("memory"),
    id,
    /** tf.memory(): live tensors and the bytes they hold (device bytes included), less the pass cache's */
    tensors: z.number().int().nonnegative(),
    tensorBytes: z.number().nonnegative(),
    /** the pass cache's rows (trainer/train/passCache.ts: bounded, kept between cycles); absent from a trainer that predates it */
    passCacheTensors: z.number().int().nonnegative().optional(),
    passCacheBytes: z.number().nonnegative().optional(),
    /** the wasm backend's heap (it only grows), null on other backends */
    wasmHeapBytes: z.number().nonnegative().nullable(),
    rssBytes: z.number().nonnegative(),
    jsHeapBytes: z.number().nonnegative(),
  }),
  /** `plan`: the model does not fit this machine (init refused before loading). */
  z.object({ type: z.literal("error"), id: id.nullable(), message: z.string(), plan: memoryPlanSchema.optional() }),
]);
export type Reply = z.infer<typeof replySchema>;
export type ReplyOf<T extends Reply["type"]> = Extract<Reply, { type: T }>;
/** The messages a command may send before its final reply. */
export type InterimReply = ReplyOf<"progress" | "work">;
export type Evaluation = ReplyOf<"evaluation">;
export type TrainResult = ReplyOf<"result">;

/** One-line description of a zod failure. */
export function describeProtocolError(err: z.ZodError): string {
  const i = err.issues[0];
  return `${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`;
}
