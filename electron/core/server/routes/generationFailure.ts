import type { FastifyReply } from "fastify";
import { AbortedError } from "../../inference/engine.js";
import { ApiError, knownApiError } from "../errors.js";

export interface GenerationFailure {
  err: unknown;
  signal: AbortSignal;
  stream: boolean;
  reply: FastifyReply;
  /** records the turn as aborted (the rollout), with the reason */
  abortTurn(reason: string): void;
  /** a stream the client closed: records the turn as stopped with what it was sent; false: nothing recorded (then abortTurn) */
  stopTurn?(): boolean;
  /** the route's own error event once its stream has begun (a `data:` error, `response.failed`) */
  streamError(message: string): void;
}

/**
 * The one way the completion routes (chat, text, Responses) answer a generation that threw: the
 * turn is aborted; a client that left gets nothing; a reply not yet begun gets the error as an
 * ordinary API error (thrown to the error handler, or written raw when the stream took the reply);
 * a stream already under way gets the route's error event and ends.
 */
export function failGeneration(f: GenerationFailure): FastifyReply {
  const aborted = f.err instanceof AbortedError || f.signal.aborted;
  const message = (f.err as Error).message;
  // The user stopped a streamed answer: its question stays, with what had arrived (marked stopped).
  const stopped = aborted && f.stream && (f.stopTurn?.() ?? false);
  if (!stopped) f.abortTurn(aborted ? "client disconnected" : `error: ${message}`);
  const apiErr = knownApiError(f.err) ?? new ApiError(500, `Generation failed: ${message}`);
  if (!f.stream) {
    if (aborted) return f.reply; // nobody is listening
    throw apiErr;
  }
  if (!f.reply.raw.headersSent) {
    f.reply.raw.writeHead(apiErr.status, { "Content-Type": "application/json; charset=utf-8" });
    f.reply.raw.end(JSON.stringify(apiErr.toJSON()));
  } else if (!aborted) {
    f.streamError(`Generation failed: ${message}`);
    f.reply.raw.end();
  } else f.reply.raw.destroy();
  return f.reply;
}
