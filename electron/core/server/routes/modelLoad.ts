import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ApiError, badRequest, knownApiError, notFound, parseBody } from "../errors.js";
import {
  ModelLoadPatchSchema,
  ModelLoadSettingsSchema,
  loadSettingsProblems,
  type ModelLoadPatch,
  type ModelLoadReply,
  type ModelLoadSettings,
  type ModelReloadReply,
} from "../../api/modelLoad.js";
import type { Store } from "../../store/store.js";
import type { ServedModel, ServedParts } from "../../servedModel.js";
import type { Engine } from "../../inference/engine.js";
import type { ModelService } from "../../models/modelService.js";
import { backendNotice, engineLoadOf, loadDefaultsOf, loadKeyOf, modelFileFactsOf, servingView, type ModelLoads } from "../../inference/loadSettings.js";

export interface ModelLoadRouteDeps {
  store: Store;
  served: ServedModel<Engine, ServedParts<Engine>>;
  loads: ModelLoads;
  /** clawrl serve's load flags for this run */
  overrides: ModelLoadPatch;
  /** $CLAWRL_THREADS (or --threads) */
  appThreads: number | undefined;
  models: ModelService;
}

/** The model an id names: an installed one, or the file served now (by its engine id or file name). */
function modelOf(d: ModelLoadRouteDeps, id: string): { id: string; name: string; path: string } {
  const m = d.models.registry.snapshot().models.find((x) => x.id === id);
  if (m) return { id: m.id, name: m.name && m.name !== m.architecture ? m.name : m.id, path: m.path };
  const e = d.served.latest?.engine.info();
  if (e && (e.modelId === id || loadKeyOf(e.modelPath) === id)) return { id, name: e.modelId, path: e.modelPath };
  throw notFound(`No installed model has the id '${id}'.`);
}

function storedOf(d: ModelLoadRouteDeps, modelPath: string): ModelLoadSettings {
  return d.store.settings.modelLoad[loadKeyOf(modelPath)] ?? ModelLoadSettingsSchema.parse({});
}

function replyOf(d: ModelLoadRouteDeps, m: { id: string; name: string; path: string }): ModelLoadReply {
  const settings = storedOf(d, m.path);
  const file = modelFileFactsOf(m.path);
  const app = { backend: d.store.settings.backend, threads: d.appThreads };
  const info = d.served.now?.engine.info() ?? null;
  const servesIt = info !== null && loadKeyOf(info.modelPath) === loadKeyOf(m.path);
  const wanted = engineLoadOf(settings, d.overrides, app);
  const used = servesIt ? d.loads.lastGood(m.path) : undefined;
  const notices = [d.loads.failure(m.path), servesIt ? backendNotice(info) : null].filter((n): n is string => !!n);
  return {
    id: m.id,
    modelFile: loadKeyOf(m.path),
    name: m.name,
    settings,
    defaults: loadDefaultsOf(file, d.store.settings.backend, app, servesIt ? info : null, used ?? null),
    limits: file.limits,
    overrides: d.overrides,
    serving: servesIt ? servingView(info, wanted, used) : null,
    notice: notices.length > 0 ? notices.join(" ") : null,
  };
}

const reloadBody = z.object({ id: z.string().min(1).max(500) }).strict();

/**
 * The model id of `/api/models/<id>/load-settings`: an id may hold slashes (a Hugging Face file,
 * hf:owner/repo/file), each segment URI-encoded, as the other model routes take it (an encoded
 * slash is refused by the request guard).
 */
function idOfLoadPath(method: string, rest: string): string {
  const m = /^(.+)\/load-settings$/.exec(rest);
  if (!m) throw notFound(`Unknown route: ${method} /api/models/${rest}`);
  try {
    return m[1].split("/").map(decodeURIComponent).join("/");
  } catch {
    throw badRequest(`not a model id: '${m[1]}'`, "id");
  }
}

/**
 * GET/PUT /api/models/:id/load-settings and POST /api/models/reload {id} (api/modelLoad.ts): each
 * model's context length, GPU layers, threads and backend, stored per model, applied when it
 * loads; a reload of the model serving now keeps its adapter (its learning line's checkpoint).
 */
export function registerModelLoadRoutes(app: FastifyInstance, d: ModelLoadRouteDeps): void {
  // Wildcards, as ids may hold slashes; the static /api/models/… routes still win.
  app.get<{ Params: { "*": string } }>("/api/models/*", async (req): Promise<ModelLoadReply> => replyOf(d, modelOf(d, idOfLoadPath("GET", req.params["*"]))));

  app.put<{ Params: { "*": string } }>("/api/models/*", async (req): Promise<ModelLoadReply> => {
    // The body first: a malformed one is a 400 whatever the path names (the one error shape, test/server/bodyShape).
    const patch = parseBody(ModelLoadPatchSchema, req.body);
    const m = modelOf(d, idOfLoadPath("PUT", req.params["*"]));
    const next: ModelLoadSettings = { ...storedOf(d, m.path), ...patch };
    const problems = loadSettingsProblems(next, modelFileFactsOf(m.path).limits);
    if (problems.length > 0) throw badRequest(problems.join(" "), null, "invalid_load_settings");
    const key = loadKeyOf(m.path);
    const map = { ...d.store.settings.modelLoad };
    if (Object.values(next).every((v) => v === null)) delete map[key];
    else map[key] = next;
    d.store.updateSettings({ modelLoad: map });
    return replyOf(d, m);
  });

  app.post("/api/models/reload", async (req): Promise<ModelReloadReply> => {
    const m = modelOf(d, parseBody(reloadBody, req.body).id);
    const info = d.served.now?.engine.info();
    if (!info || loadKeyOf(info.modelPath) !== loadKeyOf(m.path))
      throw new ApiError(
        409,
        `${m.name} is not the model serving now: its load settings apply when it is next used.`,
        "invalid_request_error",
        null,
        "not_serving",
      );
    const t0 = performance.now();
    try {
      await d.served.reload({ id: m.id, name: m.name });
    } catch (err) {
      const known = knownApiError(err);
      if (known && known.status === 409) throw known;
      const why = (err as Error).message.split("\n")[0];
      const back = d.served.now ? "it serves again with the settings that worked before" : "the model could not be loaded again";
      d.loads.failed(m.path, `The last reload with these settings failed (${why}); ${back}.`);
      throw new ApiError(
        422,
        `${m.name} could not be loaded with these settings: ${why}. ${back[0].toUpperCase()}${back.slice(1)}.`,
        "invalid_request_error",
        null,
        "reload_failed",
      );
    }
    d.loads.failed(m.path, null);
    return { ...replyOf(d, m), ms: Math.round(performance.now() - t0) };
  });
}
