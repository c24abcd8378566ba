import type { ErrorReply } from "../api/openai.js";

/**
 * OpenAI-style errors: `{"error": {"message", "type", "param", "code"}}` with an HTTP status.
 * Every route throws ApiError; the server's error handler turns anything else into one too.
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

/** Fastify's own error codes, as the API names them. */
const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_BODY_TOO_LARGE: "request_too_large",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "invalid_content_length",
  FST_ERR_CTP_EMPTY_JSON_BODY: "invalid_json",
  FST_ERR_CTP_INVALID_JSON_BODY: "invalid_json",
};

/**
 * The one mapping from anything a route or Fastify throws to the API's error shape: ApiErrors
 * as they are; Fastify's 4xx errors (body parsing, size, media type) under the API's codes;
 * anything else a 500 that says so.
 */
export function apiErrorOf(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { statusCode?: unknown; code?: unknown; message?: unknown };
  const message = typeof e?.message === "string" ? e.message : String(err);
  const status = typeof e?.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 600 ? e.statusCode : 500;
  if (status >= 500) return new ApiError(500, `Internal error: ${message}`, "server_error", null, null);
  const code = (typeof e.code === "string" && FASTIFY_CODES[e.code]) || (status === 413 ? "request_too_large" : status === 400 ? "invalid_json" : null);
  return new ApiError(status, message, "invalid_request_error", null, code);
}
