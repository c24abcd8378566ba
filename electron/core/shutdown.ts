// Graceful stop of a running core: stop admitting (the server closes its listener; fastify
// answers requests arriving on open connections with 503), let in-flight requests finish for up
// to `drainMs`, then cut what is left (long-lived streams such as SSE never finish by
// themselves) and wait for the close to complete (the server's onClose hooks: engine, trainer,
// store flush). Used by the core's process entry; `clawrl serve` can use it the same way.
import type { RunningCore } from "./core.js";

export interface ShutdownOptions {
  /** How long in-flight requests may run on. */
  drainMs: number;
}

/** Resolves to true if everything finished within the drain time, false if connections were cut. */
export async function shutdownCore(core: RunningCore, { drainMs }: ShutdownOptions): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<"deadline">((resolve) => {
    timer = setTimeout(() => resolve("deadline"), drainMs);
  });
  const closing = core.close().then(() => "closed" as const);
  const first = await Promise.race([closing, deadline]);
  clearTimeout(timer);
  if (first === "deadline") core.server.server.closeAllConnections();
  await closing;
  return first === "closed";
}
