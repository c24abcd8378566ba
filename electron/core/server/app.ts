import fs from "node:fs";
import path from "node:path";
import type { IncomingHttpHeaders } from "node:http";
import Fastify, { type FastifyInstance, type FastifyError, type FastifyReply, type FastifyRequest } from "fastify";
import fastifyStatic from "@fastify/static";
import { ApiError, apiErrorOf, forbidden, notFound, unauthorized } from "./errors.js";
import { bearerMatches } from "./token.js";
import { bodyDepthError } from "./jsonDepth.js";
import { crossSiteReason, hostAllowed, nonCanonicalPathReason, type HostPolicy } from "./requestGuard.js";

export interface ServerOptions {
  token: string;
  /** Built renderer (index.html + assets) served at `/`; absent = API only. */
  uiDir?: string;
  /** Largest request body accepted; larger gets 413. */
  bodyLimit?: number;
  /** Host names accepted besides 127.0.0.1, localhost and [::1] (Settings `allowedHosts`). */
  allowedHosts?: () => readonly string[];
}

/**
 * The routes that answer without a token, by their route pattern (never by the raw URL): health,
 * and the static UI shell (it holds no data). Everything else, unmatched paths included, needs
 * the token: deny by default, so a new route is protected without anyone remembering to.
 */
const PUBLIC_ROUTES = new Set(["/healthz", "/", "/*"]);
/** Routes that also take the token as `?token=`: the browser's EventSource cannot send headers. */
const QUERY_TOKEN_ROUTES = new Set(["/api/events"]);
/** Paths a public pattern must still not serve: the API's prefixes, whatever matched them. */
const API_PREFIX = /^\/(api|v1)(\/|$)/i;

function isPublic(req: FastifyRequest): boolean {
  const route = req.routeOptions.url;
  if (route === undefined || !PUBLIC_ROUTES.has(route) || (req.method !== "GET" && req.method !== "HEAD")) return false;
  return !API_PREFIX.test(decodeURIComponentSafe(req.url.split("?")[0]));
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function authorized(req: FastifyRequest, token: string): boolean {
  if (bearerMatches(req.headers.authorization, token)) return true;
  if (req.method !== "GET" || !QUERY_TOKEN_ROUTES.has(req.routeOptions.url ?? "")) return false;
  const q = (req.query ?? {}) as { token?: unknown };
  return typeof q.token === "string" && bearerMatches(`Bearer ${q.token}`, token);
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

export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
}

const routeTables = new WeakMap<FastifyInstance, RouteEntry[]>();

/**
 * Every route registered on a server made by createServer, with whether it answers without a
 * token: the security tests walk this table, so a new route is covered without being listed.
 */
export function routeTable(app: FastifyInstance): readonly RouteEntry[] {
  return routeTables.get(app) ?? [];
}

/** Longest path parameter: a session id (1-256 characters) percent-encoded, with room. */
const MAX_PARAM_LENGTH = 1024;

/**
 * The core's HTTP server. Fastify because it gives us body limits (413), JSON parse errors
 * (400), a 404 handler and streaming replies without hand-written plumbing, at low overhead.
 * Feature routes (OpenAI API, app API, SSE) register themselves on the returned instance.
 */
export function createServer(opts: ServerOptions): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: opts.bodyLimit ?? 32 * 1024 * 1024,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A client that trickles its headers or body cannot hold a connection forever. Streams are
    // replies, not requests: these bound only receiving the request.
    requestTimeout: 120_000,
    http: { headersTimeout: 30_000 },
    // Errors Fastify answers before routing (a malformed URL, a parameter past maxParamLength):
    // in the API's shape too.
    frameworkErrors: (err, _req, reply) => {
      const api = apiErrorOf(err);
      // The reply's generics here are the unresolved route defaults: a plain FastifyReply is what it is.
      void (reply as unknown as FastifyReply).status(api.status).send(api.toJSON());
    },
  });
  const routes: RouteEntry[] = [];
  routeTables.set(app, routes);
  app.addHook("onRoute", (r) => {
    for (const method of [r.method].flat()) {
      routes.push({ method, url: r.url, public: PUBLIC_ROUTES.has(r.url) && (method === "GET" || method === "HEAD") });
    }
  });
  const hostPolicy: HostPolicy = {
    port: () => {
      const a = app.server.address();
      return typeof a === "object" && a ? a.port : null;
    },
    extraNames: opts.allowedHosts ?? (() => []),
  };

  app.addHook("onRequest", async (req) => {
    dropEmptyBodyType(req.headers);
    // Walls before any route runs, public ones included (docs/security.md).
    if (nonCanonicalPathReason(req.url) !== null) throw notFound(`Unknown route: ${req.method} ${req.url.split("?")[0]}`);
    if (!hostAllowed(req.headers.host, hostPolicy))
      throw forbidden(
        `Host ${JSON.stringify(req.headers.host ?? "")} is not this app (add it to Settings › allowedHosts to reach the app under that name).`,
        "host_not_allowed",
      );
    if (isPublic(req)) return;
    const crossSite = crossSiteReason(req.method, req.headers, hostPolicy);
    if (crossSite !== null)
      throw forbidden(`Refused a ${crossSite}: only the app's own pages and non-browser clients may call the API.`, "cross_origin_refused");
    if (!authorized(req, opts.token)) throw unauthorized();
  });

  app.addHook("preValidation", async (req) => {
    const err = bodyDepthError(req.body);
    if (err) throw err;
  });

  app.setErrorHandler((err: FastifyError | ApiError, _req, reply) => {
    const api = apiErrorOf(err);
    return reply.status(api.status).send(api.toJSON());
  });

  app.setNotFoundHandler((req, reply) => {
    const api = new ApiError(404, `Unknown route: ${req.method} ${req.url.split("?")[0]}`, "invalid_request_error", null, "not_found");
    reply.status(404).send(api.toJSON());
  });

  app.get("/healthz", async () => ({ ok: true }));

  if (opts.uiDir && fs.existsSync(path.join(opts.uiDir, "index.html"))) {
    app.register(fastifyStatic, { root: opts.uiDir, prefix: "/", index: "index.html", wildcard: true, dotfiles: "deny" });
  } else {
    app.get("/", async (_req, reply) =>
      reply.type("text/html").send("<!doctype html><title>ClawRL</title><p>The UI is not built. Run <code>npm run build:renderer</code>.</p>"),
    );
  }
  return app;
}
