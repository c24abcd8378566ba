import type { FastifyInstance } from "fastify";
import { isAbsolute } from "node:path";
import { z } from "zod";
import { ApiError, badRequest } from "../errors.js";
import type { ModelService } from "../../models/modelService.js";
import type { CancelDownloadReply, DownloadReply, ImportModelReply, ModelsReply, UseModelReply } from "../../api/models.js";

const idBody = z.object({ id: z.string().min(1).max(500) });
const importBody = z.object({ path: z.string().min(1).max(4096) });

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    throw badRequest(`${issue.path.join(".") || "body"}: ${issue.message}`, issue.path.join(".") || null);
  }
  return r.data;
}

/** Turns the model layer's plain errors into 4xx answers with their (user-facing) messages. */
function userError(err: unknown): never {
  if (err instanceof ApiError) throw err;
  const e = err as Error & { statusCode?: number };
  throw new ApiError(e.statusCode ?? 400, e.message, "invalid_request_error", null, e.statusCode === 404 ? "not_found" : "model_error");
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
