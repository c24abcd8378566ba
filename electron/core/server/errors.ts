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
