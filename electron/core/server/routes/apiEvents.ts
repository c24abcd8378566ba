import type { FastifyInstance } from "fastify";
import type { ServerResponse } from "node:http";
import type { EventBus } from "../../rollout/events.js";

/**
 * GET /api/events: server-sent events. Every bus event goes out as `event: <name>` with a
 * JSON `data:` line; a comment line every `keepAliveMs` keeps proxies and idle timers from
 * closing the stream. The browser's EventSource cannot send an Authorization header, so
 * app.ts accepts the token as `?token=` on this route only.
 */
export function registerEventRoute(app: FastifyInstance, bus: EventBus, keepAliveMs: number): void {
  const open = new Set<ServerResponse>();

  // server.close() waits for open connections; SSE streams never end on their own.
  app.addHook("preClose", async () => {
    // Destroy after the last bytes are flushed: a client that stopped reading would otherwise
    // hold the half-closed socket (and server.close()) until its own keep-alive timer fires.
    for (const res of open) res.end(() => res.socket?.destroy());
    open.clear();
  });

  app.get("/api/events", (_req, reply) => {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      // The socket is never reused after a stream: closing it when the stream ends lets
      // server.close() finish at once instead of waiting for the client's keep-alive timer.
      connection: "close",
      "x-accel-buffering": "no",
    });
    res.write(`retry: 2000\n: connected\n\n`);
    open.add(res);
    let id = 0;
    const off = bus.onAny((name, payload) => {
      res.write(`id: ${++id}\nevent: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
    });
    const ka = setInterval(() => res.write(`: keep-alive\n\n`), keepAliveMs);
    ka.unref();
    const cleanup = () => {
      off();
      clearInterval(ka);
      open.delete(res);
    };
    // res 'close' = the client went away (or we ended it). Not req 'close': that fires as
    // soon as the (empty) request body has been read.
    res.on("close", cleanup);
  });
}
