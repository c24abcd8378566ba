// The messages between Electron main (the supervisor) and the core process, over the Node IPC
// channel that `child_process.fork` opens. Neither side imports electron, so both can be
// exercised under plain Node.
import { z } from "zod";

/** Core → main, once the HTTP server listens. `url` is the origin the window loads. */
export const coreReadySchema = z.object({
  type: z.literal("ready"),
  url: z.string().regex(/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+$/, "url must be a loopback http origin"),
  token: z.string().min(8),
  pid: z.number().int().positive(),
  /** The core's data dir (state, logs, checkpoints), for "Open Data Folder". */
  dataDir: z.string().min(1),
});
export type CoreReady = z.infer<typeof coreReadySchema>;

/** Core → main, when start-up failed (the process then exits non-zero). */
export const coreFailedSchema = z.object({ type: z.literal("failed"), message: z.string() });
export type CoreFailed = z.infer<typeof coreFailedSchema>;

export const coreToMainSchema = z.discriminatedUnion("type", [coreReadySchema, coreFailedSchema]);
export type CoreToMain = z.infer<typeof coreToMainSchema>;

/** Main → core: stop admitting, drain, flush, exit 0. */
export interface ShutdownRequest {
  type: "shutdown";
}
export type MainToCore = ShutdownRequest;

/** Line prefix the core prints on stdout when it has no IPC channel (started by hand). */
export const readyLinePrefix = "CLAWRL_CORE_READY ";

/**
 * Environment the core entry reads its configuration from (argv flags override). Names in one
 * place so main and the entry agree.
 */
export const coreEnv = {
  dataDir: "CLAWRL_HOME",
  port: "CLAWRL_CORE_PORT",
  host: "CLAWRL_CORE_HOST",
  model: "CLAWRL_MODEL",
  uiDir: "CLAWRL_UI_DIR",
  /** Milliseconds the core waits for in-flight requests before closing their sockets. */
  drainMs: "CLAWRL_CORE_DRAIN_MS",
} as const;
