/**
 * Requests and results of doctor's probe children, checked on both sides of the process
 * boundary: the llama.cpp probe's here (./llamaProbe.ts), the trainer's probes' in the trainer's
 * doctor protocol (trainer/entries/doctor/protocol.ts; its entries are started by path). Kept
 * apart from the probes: importing a probe module starts its child main.
 */
import { z } from "zod";
import { inferenceRunSchema } from "../../api/doctorReport.js";

export * from "../../../../trainer/entries/doctor/protocol.js";

export const llamaProbeRequestSchema = z.object({
  backend: z.enum(["cuda", "vulkan", "metal", "cpu"]),
  models: z.array(z.object({ label: z.string(), path: z.string() })),
  promptTokens: z.number().int().min(2),
  decodeTokens: z.number().int().min(1),
});
export type LlamaProbeRequest = z.infer<typeof llamaProbeRequestSchema>;

export const llamaProbeResultSchema = z.object({
  devices: z.array(z.string()),
  vramTotalBytes: z.number().nullable(),
  runs: z.array(inferenceRunSchema),
});
export type LlamaProbeResult = z.infer<typeof llamaProbeResultSchema>;
