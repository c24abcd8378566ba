/**
 * The typed fetch helper for Node callers of a running core (the CLI, the eval's client, the
 * benches): the bearer token, JSON both ways, the core's error body as the error's message, and
 * GET replies typed from their path (routes.ts). A reply the contract has a zod schema for is
 * parsed with it, so a core that drifts from the contract fails here, loudly, not three calls
 * later. (The renderer has its own client, renderer/src/api/client.ts, with the same typing; it
 * imports this folder's types only.) Only fetch: no Node import, as every file here.
 */
import type { z } from "zod";
import type { ApiGetPath, ApiGetReply, ApiGetRoutes } from "./routes.js";
import { SettingsSchema } from "./settings.js";

/** A reply the core refused (status ≥ 400), or a core that could not be reached (status 0). */
export class CoreApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "CoreApiError";
  }
}

/** The GET replies the contract has a schema for: parsed, not cast. */
const replySchemas: { [P in keyof ApiGetRoutes]?: z.ZodType<ApiGetRoutes[P]> } = {
  "/api/settings": SettingsSchema,
};

export interface RawReply {
  status: number;
  /** the parsed JSON body; the text when it is not JSON; null when empty */
  body: unknown;
  headers: Headers;
}

export class ApiClient {
  readonly url: string;
  constructor(
    url: string,
    private readonly token: string | null,
  ) {
    this.url = url.replace(/\/+$/, "");
  }

  /** One request, whatever its status (a network failure is a CoreApiError with status 0). */
  async request(method: string, route: string, body?: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<RawReply> {
    let res: Response;
    try {
      res = await fetch(`${this.url}${route}`, {
        method,
        headers: {
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
          ...headers,
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal,
      });
    } catch (e) {
      throw new CoreApiError(0, `${method} ${this.url}${route}: cannot connect: ${(e as Error).message}`, null, { cause: e });
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** A request that must succeed (2xx): its JSON body as the caller's contract type `T`, and the reply's headers. */
  async call<T>(method: string, route: string, body?: unknown, headers?: Record<string, string>): Promise<{ body: T; headers: Headers }> {
    const r = await this.request(method, route, body, headers);
    if (r.status < 200 || r.status >= 300) throw errorOf(method, route, r);
    return { body: r.body as T, headers: r.headers };
  }

  /** POST, PATCH or DELETE with a JSON body; the reply typed by the caller from the contract. */
  async send<T>(method: "POST" | "PATCH" | "PUT" | "DELETE", route: string, body?: unknown): Promise<T> {
    return (await this.call<T>(method, route, body)).body;
  }

  /** GET a route of the contract: the reply typed from its path, and parsed with the contract's schema where it has one. */
  async getJson<P extends ApiGetPath>(path: P): Promise<ApiGetReply<P>> {
    const { body } = await this.call<unknown>("GET", path);
    const schema = replySchemas[path as keyof ApiGetRoutes];
    if (!schema) return body as ApiGetReply<P>;
    const r = schema.safeParse(body);
    if (!r.success)
      throw new CoreApiError(
        200,
        `GET ${path}: the reply does not match the contract: ${r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`,
      );
    return r.data as ApiGetReply<P>;
  }
}

/** The core's OpenAI-style error body `{error: {message, code}}` as an error, else the status and body. */
export function errorOf(method: string, route: string, r: RawReply): CoreApiError {
  const err = (r.body as { error?: { message?: unknown; code?: unknown } } | null)?.error;
  const message = typeof err?.message === "string" ? err.message : typeof r.body === "string" ? r.body : JSON.stringify(r.body);
  return new CoreApiError(r.status, `${method} ${route} answered ${r.status}: ${message}`, typeof err?.code === "string" ? err.code : null);
}
