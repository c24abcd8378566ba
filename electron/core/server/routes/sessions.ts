import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { notFound, parseBody } from "../errors.js";
import { ChatDefaultsSchema } from "../../api/settings.js";
import type { EventBus } from "../../rollout/events.js";
import type { Rollout } from "../../rollout/rollout.js";
import type { Store } from "../../store/store.js";
import { messageText } from "../../api/chatTypes.js";
import type { ActiveBranchRequest, SessionReply, SessionSearchHit, SessionSearchReply, SessionsReply } from "../../api/sessions.js";
import { exportFileName, SESSION_EXPORT_FORMATS, sessionExport, sessionMarkdown } from "../../store/sessionExport.js";

const SessionPatch = z
  .object({
    title: z.string().trim().max(200).nullable().optional(),
    /** the chat's own generation settings; null: follow the defaults again */
    generation: ChatDefaultsSchema.nullable().optional(),
    /** true closes the session (its last turn will get no next state) */
    closed: z.literal(true).optional(),
  })
  .strict();

const ActiveBody = z.object({ turnId: z.string().min(1).max(256) }).strict() satisfies z.ZodType<ActiveBranchRequest>;
const SearchQuery = z.object({ q: z.string().trim().min(1, "give the text to search for").max(200) }).loose();
const ExportQuery = z.object({ format: z.enum(SESSION_EXPORT_FORMATS).default("json") }).loose();

/** Hits a search returns at most. */
export const SEARCH_LIMIT = 50;
const SNIPPET_CHARS = 60;

/** A short excerpt around the match (whitespace folded), with ellipses where it was cut. */
export function snippetAround(text: string, at: number, length: number): string {
  const from = Math.max(0, at - SNIPPET_CHARS);
  const to = Math.min(text.length, at + length + SNIPPET_CHARS);
  const core = text.slice(from, to).replace(/\s+/g, " ").trim();
  return `${from > 0 ? "…" : ""}${core}${to < text.length ? "…" : ""}`;
}

/**
 * Chats whose title or messages hold `q` (case-insensitive): one hit per chat, its title if that
 * matched, else its first turn whose question or answer does; the most recently active first.
 */
export function searchSessions(store: Store, q: string, limit = SEARCH_LIMIT): SessionSearchHit[] {
  const needle = q.toLowerCase();
  const hits: SessionSearchHit[] = [];
  for (const s of store.sessions()) {
    if (hits.length >= limit) break;
    const title = s.title ?? "";
    const t = title.toLowerCase().indexOf(needle);
    if (t >= 0) {
      hits.push({ sessionId: s.id, title: s.title, turnId: null, snippet: snippetAround(title, t, q.length) });
      continue;
    }
    for (const e of store.sessionTurns(s.id)) {
      const rec = store.readTurn(e.turnId);
      // The turn's own words: the messages after the last answer it replays (its question, tool results), and its answer.
      let last = rec.messages.length - 1;
      while (last >= 0 && rec.messages[last].role !== "assistant") last--;
      const texts = [
        ...rec.messages
          .slice(last + 1)
          .filter((m) => m.role === "user" || m.role === "tool")
          .map((m) => messageText(m)),
        rec.text,
      ];
      const found = texts.map((x) => [x, x.toLowerCase().indexOf(needle)] as const).find(([, i]) => i >= 0);
      if (found) {
        hits.push({ sessionId: s.id, title: s.title, turnId: e.turnId, snippet: snippetAround(found[0], found[1], q.length) });
        break;
      }
    }
  }
  return hits;
}

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

  // The branch shown from now on: the leaf given, or the latest child of an inner turn down to a leaf.
  app.put<{ Params: { id: string } }>("/api/sessions/:id/active", async (req): Promise<SessionReply> => {
    const body = parseBody(ActiveBody, req.body);
    const session = store.session(req.params.id);
    if (!session) throw notFound(`unknown session '${req.params.id}'`);
    const e = store.turnEntry(body.turnId);
    if (!e || e.sessionId !== session.id) throw notFound(`unknown turn '${body.turnId}' in session '${session.id}'`);
    store.setActiveBranch(session.id, body.turnId);
    const reply = sessionReply(store, session.id);
    bus.emit("session", { session: reply.session, change: "updated" });
    return reply;
  });

  // A message and its branch: the turn and every turn below it leave the chat, the samples and training.
  app.delete<{ Params: { id: string } }>("/api/turns/:id", async (req, reply) => {
    const e = store.turnEntry(req.params.id);
    if (!e) throw notFound(`unknown turn '${req.params.id}'`);
    const turnIds = store.deleteTurn(e.turnId);
    bus.emit("turnsDeleted", { sessionId: e.sessionId, turnIds });
    const session = store.session(e.sessionId);
    if (session) bus.emit("session", { session, change: "updated" });
    return reply.status(204).send();
  });

  app.get("/api/search", async (req): Promise<SessionSearchReply> => {
    const { q } = parseBody(SearchQuery, req.query ?? {});
    return { hits: searchSessions(store, q) };
  });

  app.get<{ Params: { id: string } }>("/api/sessions/:id/export", async (req, reply) => {
    const { format } = parseBody(ExportQuery, req.query ?? {});
    const exp = sessionExport(store, req.params.id);
    if (!exp) throw notFound(`unknown session '${req.params.id}'`);
    const name = exportFileName(exp, format);
    void reply.header("Content-Disposition", `attachment; filename="${name}"`);
    if (format === "json") return exp;
    return reply.type("text/markdown; charset=utf-8").send(sessionMarkdown(exp));
  });
}
