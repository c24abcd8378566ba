import type { CoreConfig } from "./config.js";
import type { ApiGetPath, ApiGetReply } from "../../../electron/core/api/routes.js";

/** A failed call to the core, with a message fit to show the user. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
  /** The route is not in this core: the learning routes of a core started without the learning loop (an eval's baseline, tests). */
  get notAvailable(): boolean {
    return this.status === 404 && (this.code === "not_found" || this.code === null);
  }
  /** The core could not be reached at all (status 0). */
  get unreachable(): boolean {
    return this.status === 0;
  }
}

/** Reads the OpenAI-style error body `{error: {message, code}}` the core sends, or falls back to the status text. */
export async function errorFromResponse(res: Response, what: string): Promise<ApiError> {
  let message = `${what} failed: HTTP ${res.status} ${res.statusText}`.trim();
  let code: string | null = null;
  try {
    const body: unknown = await res.json();
    const err = (body as { error?: { message?: unknown; code?: unknown } } | null)?.error;
    if (err && typeof err.message === "string") message = err.message;
    if (err && typeof err.code === "string") code = err.code;
  } catch {
    // not JSON: keep the status line
  }
  if (res.status === 401)
    message = "The assistant's engine refused the sign-in token. Open the sign-in link that ClawRL showed when it started (“clawrl serve” prints it).";
  return new ApiError(res.status, message, code);
}

/** Listeners told whether the core answered the last request (drives the "Reconnecting…" banner). */
type ReachListener = (reachable: boolean) => void;
type AuthListener = (message: string) => void;

/** Every call to the core goes through here: base URL, bearer token, JSON, readable errors. */
export class CoreClient {
  private listeners = new Set<ReachListener>();
  private authListeners = new Set<AuthListener>();
  constructor(readonly config: CoreConfig) {}

  get token(): string | null {
    return this.config.token;
  }

  url(path: string): string {
    return this.config.apiBase + path;
  }

  onReachability(fn: ReachListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Told when the core refuses our token (401), so the app can ask for another. */
  onUnauthorized(fn: AuthListener): () => void {
    this.authListeners.add(fn);
    return () => this.authListeners.delete(fn);
  }

  reportReachable(ok: boolean): void {
    for (const fn of this.listeners) fn(ok);
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...extra };
    if (this.config.token) h.Authorization = `Bearer ${this.config.token}`;
    return h;
  }

  /** fetch with the token; network failures become ApiError(0) and mark the core unreachable. */
  async raw(path: string, init: RequestInit = {}): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(this.url(path), { ...init, headers: this.headers((init.headers as Record<string, string>) ?? {}) });
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") throw e;
      this.reportReachable(false);
      throw new ApiError(0, "The assistant's engine is not answering. Reconnecting…");
    }
    this.reportReachable(true);
    if (res.status === 401)
      for (const fn of this.authListeners)
        fn(
          "The assistant's engine refused the sign-in token. Open the sign-in link that ClawRL showed when it started (“clawrl serve” prints it), or paste its token.",
        );
    return res;
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { "Content-Type": "application/json" };
    }
    const res = await this.raw(path, init);
    if (!res.ok) throw await errorFromResponse(res, `${method} ${path}`);
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.json<T>("GET", path);
  }
  /** GET a route of the contract, its reply typed from the path (electron/core/api/routes.ts). */
  getJson<P extends ApiGetPath>(path: P): Promise<ApiGetReply<P>> {
    return this.json<ApiGetReply<P>>("GET", path);
  }
  post<T>(path: string, body?: unknown): Promise<T> {
    return this.json<T>("POST", path, body ?? {});
  }
  patch<T>(path: string, body: unknown): Promise<T> {
    return this.json<T>("PATCH", path, body);
  }
  del<T>(path: string): Promise<T> {
    return this.json<T>("DELETE", path);
  }
}

/** A message for any thrown value. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
