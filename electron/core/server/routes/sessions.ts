import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { notFound, parseBody } from "../errors.js";
import { ChatDefaultsSchema } from "../../api/settings.js";
import type { EventBus } from "../../rollout/events.js";
import type { Rollout } from "../../rollout/rollout.js";
import type { Store } from "../../store/store.js";
import type { SessionReply, SessionsReply } from "../../api/sessions.js";

const SessionPatch = z
  .object({
    title: z.string().trim().max(200).nullable().optional(),
    /** the chat's own generation settings; null: follow the defaults again */
    generation: ChatDefaultsSchema.nullable().optional(),
    /** true closes the session (its last turn will get no next state) */
    closed: z.literal(true).optional(),
  })
  .strict();

export interface SessionRouteDeps {
  store: Store;
  rollout: Rollout;
  bus: EventBus;
}

/** The session reply: every turn of every branch, and the branch shown. */
export function sessionReply(store: Store, id: string, opts: { tokens?: boolean } = {}): SessionReply {
  const session = store.session(id);
  if (!session) throw notFound(`unknown session '${id}'`);
  return { session, turns: store.sessionTurns(session.id).map((e) => store.turnView(e.turnId, opts)), activePath: store.activePath(session.id) };
}

/** The chats: list, read (the tree and the active path), rename and settings, close, delete. */
export function registerSessionRoutes(app: FastifyInstance, deps: SessionRouteDeps): void {
  const { store, rollout, bus } = deps;

  app.get("/api/sessions", async (): Promise<SessionsReply> => ({ sessions: store.sessions() }));

  app.get<{ Params: { id: string }; Querystring: { tokens?: string } }>("/api/sessions/:id", async (req): Promise<SessionReply> => {
    const tokens = req.query.tokens === "1" || req.query.tokens === "true";
    return sessionReply(store, req.params.id, { tokens });
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
}
