// The core's port, kept between runs. The window's origin is the core's URL, so a port that
// changed with every launch would lose what the page keeps per origin (theme, each chat's
// generation settings), and outside clients (OpenClaw's baseUrl) would need reconfiguring after
// every restart. No electron import.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { writeFileAtomicSync } from "../../common/fs/atomicFile.js";

/** The port the app asks for the first time: the one `clawrl serve` uses, so docs and snippets agree. */
export const APP_DEFAULT_PORT = 8765;

const portSchema = z.object({ port: z.int().min(1).max(65535) });

/** The port remembered from the last run; null when none (or the file is malformed or foreign). */
export function loadCorePort(file: string): number | null {
  try {
    const r = portSchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
    return r.success ? r.data.port : null;
  } catch {
    return null;
  }
}

/** Written atomically: a crash leaves the old file or the new one. */
export function saveCorePort(file: string, port: number): void {
  const valid = portSchema.parse({ port });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomicSync(file, `${JSON.stringify(valid)}\n`);
}

/**
 * The port for a launch: the running core's after a crash, else the one remembered from the
 * last run, else APP_DEFAULT_PORT; after a launch that died before ready (the port is taken,
 * perhaps by another program), any free port (0).
 */
export function corePortFor(previousUrl: string | null, failedStarts: number, remembered: number | null): number {
  if (failedStarts > 0) return 0;
  if (previousUrl) return Number(new URL(previousUrl).port);
  return remembered ?? APP_DEFAULT_PORT;
}

/**
 * Starts the core; when the first launch dies before ready (the asked-for port may be held by
 * another program), once more: corePortFor then asks for any free port. The second failure is
 * the caller's.
 */
export async function startWithPortFallback<E>(core: { start(): Promise<E> }): Promise<E> {
  try {
    return await core.start();
  } catch (err) {
    console.warn(`[main] the core did not start (${(err as Error).message}); trying again on any free port`);
    return core.start();
  }
}
