import type { FastifyReply } from "fastify";

/** A signal that fires when the client goes away before the reply is written (it stops the work and frees its sequence). */
export function abortWhenClientLeaves(reply: FastifyReply): AbortSignal {
  const abort = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableFinished) abort.abort();
  });
  return abort.signal;
}
