import type { FastifyInstance } from "fastify";
import { isAbsolute } from "node:path";
import { z } from "zod";
import { badRequest, knownApiError, notFound, parseBody } from "../errors.js";
import type { ModelService } from "../../models/modelService.js";
import type {
  CancelDownloadReply,
  DeleteModelReply,
  DownloadReply,
  ImportModelReply,
  ModelFilesReply,
  ModelSearchReply,
  ModelsReply,
  UseModelReply,
} from "../../api/models.js";

const idBody = z.object({ id: z.string().min(1).max(500) });
const importBody = z.object({ path: z.string().min(1).max(4096) });
const searchQuery = z.object({ q: z.string().trim().min(1, "'q' names what to search for").max(200) });
const filesQuery = z.object({ repo: z.string().regex(/^[^/\s]+\/[^/\s]+$/, "'repo' is a Hugging Face repository: owner/name") });

/** The id in a path's rest: its segments decoded (the router leaves some percent-encodings in place). */
function idOfPath(rest: string): string {
  try {
    return rest.split("/").map(decodeURIComponent).join("/");
  } catch {
    throw badRequest(`not a model id: '${rest}'`, "id");
  }
}

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
  // Hugging Face search (HF_ENDPOINT): repositories with GGUF files, then one repository's files with their verdicts here.
  app.get("/api/models/search", async (req): Promise<ModelSearchReply> => {
    const { q } = parseBody(searchQuery, req.query);
    return models.search(q);
  });
  app.get("/api/models/search/files", async (req): Promise<ModelFilesReply> => {
    const { repo } = parseBody(filesQuery, req.query);
    return models.searchFiles(repo);
  });
  // A model's id may hold slashes (hf:owner/repo/file.gguf): the rest of the path, each segment encoded on its own.
  app.delete<{ Params: { "*": string } }>("/api/models/*", async (req): Promise<DeleteModelReply> => models.remove(idOfPath(req.params["*"])));
  // Pause, resume and cancel of a download whose id holds slashes (a Hugging Face file): /api/models/<id>/<action>.
  app.post<{ Params: { "*": string } }>("/api/models/*", async (req): Promise<DownloadReply | CancelDownloadReply> => {
    const m = /^(.+)\/(pause|resume|cancel)$/.exec(req.params["*"]);
    if (!m) throw notFound(`Unknown route: POST ${req.url.split("?")[0]}`);
    const id = idOfPath(m[1]);
    try {
      if (m[2] === "cancel") return { download: models.cancel(id) } satisfies CancelDownloadReply;
      return { download: models[m[2] as "pause" | "resume"](id) } satisfies DownloadReply;
    } catch (err) {
      userError(err);
    }
  });
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
