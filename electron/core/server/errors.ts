import type { z } from "zod";
import type { ErrorReply } from "../api/openai.js";
import { ConflictError, DomainError, InvalidInputError, NotFoundError, UnavailableError, UnusableInputError } from "../domainErrors.js";
import { NothingToUndoError, UnknownPreferenceError } from "../preferences/service.js";
import { UnknownTurnError } from "../store/store.js";
import { SettingsError } from "../store/settings.js";
import { ToolRequestError } from "../tools/host.js";
import { CheckpointError } from "../training/checkpoints.js";
import { LoadTimeoutError } from "../inference/loadBound.js";
import { UnloadableGgufError } from "../../../models/gguf/loadable.js";
import { NonFiniteWeightsError } from "../../../models/gguf/finiteWeights.js";
import { AttachmentTooLargeError, UnreadableAttachmentError, UnsupportedAttachmentError } from "../attachments/errors.js";

/**
 * The server's one way in and one way out.
 *
 * In: parseBody checks a request body (or any part of one) against a zod schema and answers the
 * first problem as a 400 naming its field, in one format for every route.
 * Out: every error a route, a domain module or Fastify throws becomes an OpenAI-style
 * `{"error": {"message", "type", "param", "code"}}` with an HTTP status through apiErrorOf: an
 * ApiError as it is; a domain error by the table below; Fastify's own 4xx under the API's codes;
 * anything else a 500 with a generic message (the detail goes to the log).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = status >= 500 ? "server_error" : "invalid_request_error",
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  toJSON(): ErrorReply {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const badRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new ApiError(400, message, "invalid_request_error", param, code);
export const notFound = (message: string) => new ApiError(404, message, "invalid_request_error", null, "not_found");
export const unauthorized = () =>
  new ApiError(401, "Missing or invalid bearer token (Authorization: Bearer <token>).", "invalid_request_error", null, "invalid_api_key");
export const forbidden = (message: string, code: string) => new ApiError(403, message, "invalid_request_error", null, code);

// ---- in: the one body parser ----

/** A zod issue path as the API names a field: `messages[0].content`. */
export function paramOf(path: readonly PropertyKey[]): string {
  let s = "";
  for (const p of path) s += typeof p === "number" ? `[${p}]` : s ? `.${String(p)}` : String(p);
  return s;
}

export interface ParseOptions {
  /** where the value sits in the body, for the error's param (a part checked on its own) */
  at?: readonly PropertyKey[];
  /** a missing body (no content, JSON null) is checked as `{}`: routes whose fields are all optional */
  optional?: boolean;
}

/**
 * The request body (or part of it, `at`) as `schema` types it, or a 400 in the API's one format:
 * not a JSON object → "The request body must be a JSON object." (invalid_request); an unknown
 * field → "Unsupported or unknown field 'x'." (unsupported_parameter, param x); any other first
 * problem → "Invalid 'x': <zod's message>" (invalid_value, param x).
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, opts: ParseOptions = {}): z.infer<S> {
  const at = opts.at ?? [];
  if (at.length === 0) {
    if (opts.optional && (body === undefined || body === null)) body = {};
    if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body))
      throw badRequest("The request body must be a JSON object.", null, "invalid_request");
  }
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  if (issue.code === "unrecognized_keys") {
    const param = paramOf([...at, ...issue.path, issue.keys[0]]);
    throw badRequest(`Unsupported or unknown field '${param}'.`, param, "unsupported_parameter");
  }
  const param = paramOf([...at, ...issue.path]);
  throw badRequest(param ? `Invalid '${param}': ${issue.message}` : `Invalid request body: ${issue.message}`, param || null, "invalid_value");
}

// ---- out: the one error mapping ----

interface Mapping<E extends Error = Error> {
  status: number | ((e: E) => number);
  /** the code when the error names none */
  code?: string | null | ((e: E) => string | null);
}
type ErrorClass<E extends Error = Error> = abstract new (...args: never[]) => E;
type Entry = readonly [ErrorClass, Mapping];
const entry = <E extends Error>(cls: ErrorClass<E>, m: Mapping<E>): Entry => [cls, m as Mapping];

/**
 * Domain error → HTTP status and code, written once; the first matching class wins (subclasses
 * before their parents). A function: the classes are read when an error is mapped, never while
 * modules load.
 */
const domainTable = (): readonly Entry[] => [
  entry(InvalidInputError, { status: 400 }),
  entry(NotFoundError, { status: 404, code: "not_found" }),
  entry(ConflictError, { status: 409 }),
  entry(UnusableInputError, { status: 422 }),
  entry(UnavailableError, { status: 503 }),
  entry(UnknownPreferenceError, { status: 404, code: "not_found" }),
  entry(UnknownTurnError, { status: 404, code: "not_found" }),
  entry(NothingToUndoError, { status: 400 }),
  entry(SettingsError, { status: 400 }),
  entry(ToolRequestError, { status: (e) => e.status, code: (e) => e.code }),
  // a model file refused before or while loading: the user's file, not the app's fault
  entry(UnloadableGgufError, { status: 422, code: "model_error" }),
  entry(NonFiniteWeightsError, { status: 422, code: "model_error" }),
  entry(LoadTimeoutError, { status: 422, code: "model_error" }),
  // an attached file refused (issue 30): too large, a type the app cannot read (an image, binary data), or no text to be had
  entry(AttachmentTooLargeError, { status: 413 }),
  entry(UnsupportedAttachmentError, { status: 415 }),
  entry(UnreadableAttachmentError, { status: 422 }),
  entry(CheckpointError, { status: (e) => e.status, code: (e) => (e.status === 404 ? "not_found" : "checkpoint_unusable") }),
];

/** The API error a known (domain or API) error maps to; null for anything else. */
export function knownApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (!(err instanceof Error)) return null;
  for (const [cls, m] of domainTable()) {
    if (!(err instanceof cls)) continue;
    const status = typeof m.status === "function" ? m.status(err) : m.status;
    const own = err instanceof DomainError ? err.code : null;
    const code = own ?? (typeof m.code === "function" ? m.code(err) : (m.code ?? null));
    return new ApiError(status, err.message, status >= 500 ? "server_error" : "invalid_request_error", err instanceof DomainError ? err.param : null, code);
  }
  return null;
}

/** Fastify's own error codes, as the API names them. */
const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_BODY_TOO_LARGE: "request_too_large",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "invalid_content_length",
  FST_ERR_CTP_EMPTY_JSON_BODY: "invalid_json",
  FST_ERR_CTP_INVALID_JSON_BODY: "invalid_json",
};

/** Where the detail of an unexpected error goes (the core's log); tests may replace it. */
export let logUnexpected = (err: unknown): void => {
  console.error("Internal error answering a request:", err);
};
export function setUnexpectedErrorLog(log: (err: unknown) => void): void {
  logUnexpected = log;
}

/**
 * The one mapping from anything a route, a domain module or Fastify throws to the API's error:
 * known errors by knownApiError; Fastify's 4xx errors (body parsing, size, media type) under the
 * API's codes; anything else a 500 that keeps its detail for the log.
 */
export function apiErrorOf(err: unknown): ApiError {
  const known = knownApiError(err);
  if (known) return known;
  const e = err as { statusCode?: unknown; code?: unknown; message?: unknown } | null;
  const status = typeof e?.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500 ? e.statusCode : 500;
  if (status >= 500) {
    logUnexpected(err);
    return new ApiError(500, "Internal error: the request could not be completed (the app's log has the detail).", "server_error", null, null);
  }
  const message = typeof e?.message === "string" ? e.message : String(err);
  const code = (typeof e?.code === "string" && FASTIFY_CODES[e.code]) || (status === 413 ? "request_too_large" : status === 400 ? "invalid_json" : null);
  return new ApiError(status, message, "invalid_request_error", null, code);
}
