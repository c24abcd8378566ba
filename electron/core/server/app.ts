import fs from "node:fs";
import path from "node:path";
import type { IncomingHttpHeaders } from "node:http";
import Fastify, { type FastifyInstance, type FastifyError } from "fastify";
import fastifyStatic from "@fastify/static";
import { ApiError, unauthorized } from "./errors.js";
import { bearerMatches } from "./token.js";

export interface ServerOptions {
  token: string;
  /** Built renderer (index.html + assets) served at `/`; absent = API only. */
  uiDir?: string;
  /** Largest request body accepted; larger gets 413. */
  bodyLimit?: number;
}

/** Routes that answer without a token: health, and the static UI shell (it holds no data). */
function isPublic(url: string): boolean {
  const p = url.split("?")[0];
  return p === "/healthz" || !(p.startsWith("/v1/") || p === "/v1" || p.startsWith("/api/") || p === "/api");
}

/**
 * A request that carries no body (no content-length or 0, not chunked) has nothing to parse,
 * whatever content-type it names: dropping the header makes Fastify hand it to the route with no
 * body, as it does for a bodiless request without one (clients send `content-type:
 * application/json` on every call, and Fastify's JSON parser answers an empty body with 400).
 */
function dropEmptyBodyType(headers: IncomingHttpHeaders): void {
  if (headers["content-type"] === undefined || headers["transfer-encoding"] !== undefined) return;
  const length = headers["content-length"];
  if (length === undefined || length === "0") delete headers["content-type"];
}

/**
 * The core's HTTP server. Fastify because it gives us body limits (413), JSON parse errors
 * (400), a 404 handler and streaming replies without hand-written plumbing, at low overhead.
 * Feature routes (OpenAI API, app API, SSE) register themselves on the returned instance.
 */
export function createServer(opts: ServerOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: opts.bodyLimit ?? 32 * 1024 * 1024 });

  app.addHook("onRequest", async (req) => {
    dropEmptyBodyType(req.headers);
    if (req.method === "OPTIONS" || isPublic(req.url)) return;
    if (bearerMatches(req.headers.authorization, opts.token)) return;
    // The browser's EventSource cannot send headers: the SSE route alone also takes ?token=.
    const q = (req.query ?? {}) as { token?: unknown };
    if (req.url.split("?")[0] === "/api/events" && typeof q.token === "string" && bearerMatches(`Bearer ${q.token}`, opts.token)) return;
    throw unauthorized();
  });

  app.setErrorHandler((err: FastifyError | ApiError, _req, reply) => {
    if (err instanceof ApiError) return reply.status(err.status).send(err.toJSON());
    const status = typeof err.statusCode === "number" && err.statusCode >= 400 ? err.statusCode : 500;
    const code =
      status === 413 ? "request_too_large" : err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" ? "unsupported_media_type" : status === 400 ? "invalid_json" : null;
    const message = status === 500 ? `Internal error: ${err.message}` : err.message;
    return reply.status(status).send(new ApiError(status, message, undefined, null, code).toJSON());
  });

  app.setNotFoundHandler((req, reply) => {
    reply.status(404).send(new ApiError(404, `Unknown route: ${req.method} ${req.url.split("?")[0]}`, "invalid_request_error", null, "not_found").toJSON());
  });

  app.get("/healthz", async () => ({ ok: true }));

  if (opts.uiDir && fs.existsSync(path.join(opts.uiDir, "index.html"))) {
    app.register(fastifyStatic, { root: opts.uiDir, prefix: "/", index: "index.html", wildcard: true });
  } else {
    app.get("/", async (_req, reply) =>
      reply
        .type("text/html")
        .send("<!doctype html><title>ClawRL</title><p>The UI is not built. Run <code>npm run build:renderer</code>.</p>"),
    );
  }
  return app;
}
