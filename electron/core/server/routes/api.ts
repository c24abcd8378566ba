import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { notFound, parseBody } from "../errors.js";
import { ChatDefaultsSchema } from "../../api/settings.js";
import { rewardOf } from "../../store/store.js";
import { publicSettings, restoreMaskedSecrets } from "../../store/secrets.js";
import { registerEventRoute } from "./apiEvents.js";
import type { ApiDeps, EngineStatus } from "./apiTypes.js";
import type { FeedbackReply, SessionReply, SessionsReply } from "../../api/sessions.js";
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

const SessionPatch = z
  .object({
    title: z.string().trim().max(200).nullable().optional(),
    /** the chat's own generation settings; null: follow the defaults again */
    generation: ChatDefaultsSchema.nullable().optional(),
    /** true closes the session (its last turn will get no next state) */
    closed: z.literal(true).optional(),
  })
  .strict();

const noEngine: EngineStatus = { model: null, backend: null, gpu: null, adapter: "base" };

/** The app API the UI uses: status, sessions, feedback, settings, and the SSE event stream. */
export function registerApiRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store, rollout, bus } = deps;

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

  app.get("/api/sessions", async (): Promise<SessionsReply> => ({ sessions: store.sessions() }));

  app.get<{ Params: { id: string }; Querystring: { tokens?: string } }>("/api/sessions/:id", async (req): Promise<SessionReply> => {
    const session = store.session(req.params.id);
    if (!session) throw notFound(`unknown session '${req.params.id}'`);
    const tokens = req.query.tokens === "1" || req.query.tokens === "true";
    return { session, turns: store.sessionTurns(session.id).map((e) => store.turnView(e.turnId, { tokens })) };
  });

  app.patch<{ Params: { id: string } }>("/api/sessions/:id", async (req) => {
    const patch = parseBody(SessionPatch, req.body);
    const session = store.session(req.params.id);
    if (!session) throw notFound(`unknown session '${req.params.id}'`);
    if (patch.title !== undefined || patch.generation !== undefined) {
      // One state.json write for both changes.
      const { generation, ...rest } = session;
      const own = patch.generation === undefined ? generation : patch.generation;
      const next = { ...rest, ...(own ? { generation: own } : {}), title: patch.title === undefined ? session.title : patch.title === "" ? null : patch.title };
      store.putSession(next);
      bus.emit("session", { session: next, change: patch.title !== undefined ? "renamed" : "settings" });
    }
    if (patch.closed) rollout.closeSession(session.id, "done");
    return { session: store.session(session.id) };
  });

  app.delete<{ Params: { id: string } }>("/api/sessions/:id", async (req, reply) => {
    if (!store.deleteSession(req.params.id)) throw notFound(`unknown session '${req.params.id}'`);
    bus.emit("sessionDeleted", { sessionId: req.params.id });
    return reply.status(204).send();
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
