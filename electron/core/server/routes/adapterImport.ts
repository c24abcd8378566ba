import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ApiError, badRequest, parseBody } from "../errors.js";
import { checkpointView, swapView, type ServingNow } from "./training.js";
import type { ImportReply } from "../../api/training.js";
import { ActivationError, type TrainingSupervisor } from "../../training/supervisor.js";

/**
 * POST /api/checkpoints/import {path}: an adapter trained elsewhere (a PEFT LoRA directory, its
 * adapter_model.safetensors, or a llama.cpp LoRA GGUF, on this machine) becomes a candidate
 * checkpoint through the publish gate (TrainingSupervisor.importCandidate). 200 with the
 * checkpoint (verdict "published" and served, or "rejected" and kept) and what was read; 422 with
 * the reason when it does not fit the served model or is damaged (nothing written, the served
 * adapter stays); 409 while learning is paused; 503 when the trainer cannot run.
 */
export function registerAdapterImportRoute(app: FastifyInstance, sup: TrainingSupervisor, serving: () => ServingNow): void {
  app.post("/api/checkpoints/import", async (req): Promise<ImportReply> => {
    // The path is checked below, with messages that say what it must name.
    const raw = parseBody(z.looseObject({ path: z.unknown().optional() }), req.body).path;
    if (typeof raw !== "string" || raw.trim() === "") throw badRequest("'path' must name the adapter: a PEFT directory or a llama.cpp LoRA .gguf file", "path");
    const p = raw.trim().replace(/^~(?=$|[/\\])/, os.homedir());
    if (!path.isAbsolute(p)) throw badRequest(`'path' must be an absolute path on the machine running the app, got '${raw}'`, "path");
    try {
      const r = await sup.importCandidate(p);
      return {
        checkpoint: checkpointView(r.checkpoint, serving()),
        imported: r.imported,
        swap: r.swap && swapView(r.swap),
      };
    } catch (e) {
      if (e instanceof ActivationError) {
        throw new ApiError(
          e.status,
          e.message,
          e.status >= 500 ? "server_error" : "invalid_request_error",
          "path",
          e.status === 422 ? "adapter_unusable" : e.status === 409 ? "learning_paused" : "trainer_unavailable",
        );
      }
      throw e;
    }
  });
}
