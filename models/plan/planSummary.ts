import { z } from "zod";

/** What the trainer's memory plan decided (models/plan/memoryPlan.ts), as the core shows it. */
export const memoryPlanSchema = z.object({
  fits: z.boolean(),
  /** tfjs backend the plan is for ("wasm", "webgpu", ...). */
  backend: z.string(),
  summary: z.string(),
  placement: z.object({ layers: z.enum(["device", "host-f32", "host-packed"]), head: z.enum(["device", "host-f32", "host-packed"]) }),
  maxContext: z.number().int().nonnegative(),
  requestedMaxContext: z.number().int().nonnegative(),
  maxContextThatFits: z.number().int().nonnegative(),
  microBatchTokens: z.number().int().nonnegative(),
  /** Blocks whose activations a step keeps (not recomputed in the backward); absent from older trainers. */
  keptBlocks: z.number().int().nonnegative().optional(),
  needDeviceBytes: z.number().nonnegative(),
  availableDeviceBytes: z.number().nonnegative().optional(),
  needHostBytes: z.number().nonnegative(),
  availableHostBytes: z.number().nonnegative(),
});
export type MemoryPlanSummary = z.infer<typeof memoryPlanSchema>;
