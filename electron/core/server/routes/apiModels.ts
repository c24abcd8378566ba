import type { FastifyInstance } from "fastify";
import { isAbsolute } from "node:path";
import { z } from "zod";
import { badRequest, knownApiError, parseBody } from "../errors.js";
import type { ModelService } from "../../models/modelService.js";
import type { CancelDownloadReply, DownloadReply, ImportModelReply, ModelsReply, UseModelReply } from "../../api/models.js";

const idBody = z.object({ id: z.string().min(1).max(500) });
const importBody = z.object({ path: z.string().min(1).max(4096) });

const parse = <T>(schema: z.ZodType<T>, body: unknown): T => parseBody(schema, body, { optional: true });

/**
 * The model layer's errors as answers: its named errors (an unknown download, a file refused
 * before loading) by the server's one mapping; its plain errors are the user's (an unknown id, a
 * file that is no model: user-facing messages), 400 `model_error`.
 */
function userError(err: unknown): never {
  throw knownApiError(err) ?? badRequest((err as Error).message, null, "model_error");
}

/** /api/models: catalog, installed models, downloads (pull, pause, resume, cancel), import, use. */
export function registerModelRoutes(app: FastifyInstance, models: ModelService): void {
  app.get("/api/models", async (): Promise<ModelsReply> => models.list());
  app.post("/api/models/pull", async (req, reply) => {
    const { id } = parse(idBody, req.body);
    try {
      return reply.status(202).send({ download: models.pull(id) } satisfies DownloadReply);
    } catch (err) {
      userError(err);
    }
  });
  app.post("/api/models/import", async (req): Promise<ImportModelReply> => {
    const { path } = parse(importBody, req.body);
    // Relative to what? The core's working directory is no one's business: absolute paths only.
    if (!isAbsolute(path)) throw badRequest(`'path' must be an absolute path on the machine running the app, got '${path}'`, "path");
    try {
      return { model: models.importFile(path) };
    } catch (err) {
      userError(err);
    }
  });
  app.post("/api/models/use", async (req): Promise<UseModelReply> => {
    const { id } = parse(idBody, req.body);
    try {
      return await models.use(id);
    } catch (err) {
      userError(err);
    }
  });
  for (const action of ["pause", "resume"] as const) {
    app.post<{ Params: { id: string } }>(`/api/models/:id/${action}`, async (req): Promise<DownloadReply> => {
      try {
        return { download: models[action](req.params.id) };
      } catch (err) {
        userError(err);
      }
    });
  }
  app.post<{ Params: { id: string } }>("/api/models/:id/cancel", async (req): Promise<CancelDownloadReply> => {
    try {
      return { download: models.cancel(req.params.id) };
    } catch (err) {
      userError(err);
    }
  });
}
