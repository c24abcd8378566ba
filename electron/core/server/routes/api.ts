import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { notFound, parseBody } from "../errors.js";
import { rewardOf } from "../../store/store.js";
import { publicSettings, restoreMaskedSecrets } from "../../store/secrets.js";
import { registerEventRoute } from "./apiEvents.js";
import type { ApiDeps, EngineStatus } from "./apiTypes.js";
import type { FeedbackReply } from "../../api/sessions.js";
import type { Settings } from "../../api/settings.js";
import type { StatusReply } from "../../api/status.js";

export type { ApiDeps, EngineStatus, EngineStatusProvider } from "./apiTypes.js";

const FeedbackBody = z
  .object({
    turnId: z.string().min(1),
    thumbs: z.enum(["up", "down"]).nullable().optional(),
    hint: z.string().max(4000).nullable().optional(),
  })
  .strict()
  .refine((b) => b.thumbs !== undefined || b.hint !== undefined, { message: "give thumbs and/or hint" });

const noEngine: EngineStatus = { model: null, backend: null, gpu: null, adapter: "base" };

/** The app API the UI uses: status, feedback, settings, and the SSE event stream (the sessions' routes: routes/sessions.ts). */
export function registerApiRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store, bus } = deps;

  app.get("/api/status", async (): Promise<StatusReply> => {
    const engine = deps.engineStatus ? await deps.engineStatus() : noEngine;
    return {
      ...engine,
      training: { ...store.state.training, ...(deps.trainingStatus?.() ?? {}) },
      sessions: store.sessions().length,
      turns: store.turnCount,
      recovery: store.recoveryMessage,
    };
  });

  app.post("/api/feedback", async (req): Promise<FeedbackReply> => {
    const body = parseBody(FeedbackBody, req.body);
    const entry = store.turnEntry(body.turnId);
    if (!entry) throw notFound(`unknown turn '${body.turnId}'`);
    store.appendFeedback(body.turnId, { thumbs: body.thumbs, hint: body.hint });
    const current = store.turnEntry(body.turnId)!;
    bus.emit("feedback", { turnId: body.turnId, sessionId: entry.sessionId, feedback: current.feedback });
    const r = rewardOf(current);
    return { turnId: body.turnId, sessionId: entry.sessionId, feedback: current.feedback, reward: r.reward, rewardSource: r.source };
  });

  app.get("/api/settings", async (): Promise<Settings> => publicSettings(store.settings));

  // The settings' own schema checks the patch (a SettingsError: 400 by the server's mapping).
  app.patch("/api/settings", async (req): Promise<Settings> => {
    const patch = parseBody(z.record(z.string(), z.unknown()), req.body);
    const settings = publicSettings(store.updateSettings(restoreMaskedSecrets(store.settings, patch)));
    bus.emit("settings", { settings });
    return settings;
  });

  registerEventRoute(app, bus, deps.sseKeepAliveMs ?? 15_000);
}
