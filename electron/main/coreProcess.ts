// Supervision of the core process: start it, wait for its ready handshake, restart it with
// back-off when it dies, stop it gracefully (then SIGKILL after a timeout).
//
// Why a Node child process (child_process.fork; under Electron with ELECTRON_RUN_AS_NODE=1)
// rather than Electron's utilityProcess: the core must run with plain Node semantics (it never
// imports electron, and node-llama-cpp / tfjs native addons load as in Node), fork gives us a
// typed IPC channel plus POSIX signals for the hard-kill path, and, above all, this exact code
// path runs under plain Node in the tests, with a real child; utilityProcess exists only inside
// Electron, which cannot run on the CI machines. No electron import here.
import { fork, type ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { coreToMainSchema, type CoreReady, type MainToCore } from "../shared/coreMessages.js";

export interface CoreEndpoint {
  /** Origin of the core's HTTP server (the window loads it; the API lives under it). */
  url: string;
  token: string;
  pid: number;
  dataDir: string;
}

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
}

export const defaultBackoff: BackoffOptions = { initialMs: 500, maxMs: 30_000, factor: 2 };

/** Delay before restart number `attempt` (1-based) after consecutive crashes. */
export function backoffDelay(attempt: number, opts: BackoffOptions = defaultBackoff): number {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a positive integer, got ${attempt}`);
  return Math.min(opts.maxMs, Math.round(opts.initialMs * opts.factor ** (attempt - 1)));
}

export interface LaunchSpec {
  args?: string[];
  env?: NodeJS.ProcessEnv;
}

export interface CoreSupervisorOptions {
  /** Module the child runs (out/main/core.js when built; electron/core/entry.ts through tsx). */
  entry: string;
  /** Node flags for the child, e.g. ["--import", "tsx"] for TypeScript. Default none. */
  execArgv?: string[];
  /** Binary to run: process.execPath (node, or the Electron binary in node mode). */
  execPath?: string;
  /** Base environment; ELECTRON_RUN_AS_NODE is added under Electron. */
  env?: NodeJS.ProcessEnv;
  /**
   * Per-launch args/env, given the previous endpoint and how many launches in a row died
   * before ready (e.g. ask for the same port again, but not if that keeps failing).
   */
  launch?: (previous: CoreEndpoint | null, failedStarts: number) => LaunchSpec;
  readyTimeoutMs?: number;
  stopTimeoutMs?: number;
  backoff?: BackoffOptions;
  /** Consecutive failed launches (died before ready) after which the supervisor gives up. */
  maxFailedStarts?: number;
  /** A run that lasted this long resets the crash counter. */
  stableAfterMs?: number;
}

export interface CoreExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the supervisor asked for it (stop / kill). */
  expected: boolean;
}

export interface StopResult extends CoreExit {
  /** False when the stop timeout ran out and the process was killed. */
  graceful: boolean;
}

export interface CoreSupervisorEvents {
  ready: [CoreEndpoint];
  exit: [CoreExit];
  restarting: [{ attempt: number; delayMs: number }];
  failed: [Error];
  output: [{ stream: "stdout" | "stderr"; text: string }];
}

const tailLimit = 4000;

/**
 * Runs the core as a child process and keeps it running. `start()` resolves with the first
 * endpoint; after an unexpected exit it restarts (back-off) and emits `ready` again.
 */
export class CoreSupervisor extends EventEmitter<CoreSupervisorEvents> {
  private child: ChildProcess | null = null;
  /** Resolves when the current child has exited and its output has been read to the end. */
  private childEnded: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | null = null;
  private current: CoreEndpoint | null = null;
  private previous: CoreEndpoint | null = null;
  private stopping: Promise<StopResult> | null = null;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private crashes = 0;
  /** Launches in a row that died before ready. */
  private failedStarts = 0;
  private stderrTail = "";
  private readonly opts: Required<Omit<CoreSupervisorOptions, "launch" | "env">> & Pick<CoreSupervisorOptions, "launch" | "env">;

  constructor(opts: CoreSupervisorOptions) {
    super();
    this.opts = {
      execArgv: [],
      execPath: process.execPath,
      readyTimeoutMs: 60_000,
      stopTimeoutMs: 10_000,
      backoff: defaultBackoff,
      maxFailedStarts: 5,
      stableAfterMs: 30_000,
      ...opts,
    };
  }

  /** The running core's endpoint, or null while it is (re)starting or stopped. */
  get endpoint(): CoreEndpoint | null {
    return this.current;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Launches the core and resolves once it reports ready. */
  async start(): Promise<CoreEndpoint> {
    if (this.child) throw new Error("core is already running");
    this.stopped = false;
    this.stopping = null;
    return this.launch();
  }

  private launch(): Promise<CoreEndpoint> {
    const spec = this.opts.launch?.(this.previous, this.failedStarts) ?? {};
    const env: NodeJS.ProcessEnv = { ...(this.opts.env ?? process.env), ...spec.env };
    // Under Electron the binary is Electron itself: make it behave as plain Node.
    if (process.versions.electron) env.ELECTRON_RUN_AS_NODE = "1";
    this.stderrTail = "";
    const child = fork(this.opts.entry, spec.args ?? [], {
      execPath: this.opts.execPath,
      execArgv: this.opts.execArgv,
      env,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
      // Own process group (POSIX): a terminal's Ctrl-C reaches main only, which then stops the
      // core gracefully instead of racing it (the core also exits if main's IPC channel closes).
      // Not on Windows, where a detached child gets its own console window.
      detached: process.platform !== "win32",
    });
    this.child = child;
    const startedAt = Date.now();
    // "exit" can come before the last output: wait for the pipes too (bounded, in case a
    // grandchild inherited them), so a crash's last stderr line is never lost.
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("exit", (code, signal) => void outputDrained(child).then(() => resolve({ code, signal })));
    });
    this.childEnded = ended;
    // Always read both pipes: an unread pipe fills up and blocks the child.
    child.stdout?.setEncoding("utf8").on("data", (text: string) => this.emit("output", { stream: "stdout", text }));
    child.stderr?.setEncoding("utf8").on("data", (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-tailLimit);
      this.emit("output", { stream: "stderr", text });
    });

    return new Promise<CoreEndpoint>((resolve, reject) => {
      let settled = false;
      let wasReady = false;
      const readyTimer = setTimeout(() => {
        fail(new Error(`core did not report ready within ${this.opts.readyTimeoutMs} ms`));
        child.kill("SIGKILL");
      }, this.opts.readyTimeoutMs);
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(readyTimer);
        reject(err);
      };
      let failure: string | null = null;

      child.on("message", (raw: unknown) => {
        const parsed = coreToMainSchema.safeParse(raw);
        if (!parsed.success) {
          this.emit("output", { stream: "stderr", text: `core sent an unknown message: ${JSON.stringify(raw)}\n` });
          return;
        }
        const msg = parsed.data;
        if (msg.type === "failed") {
          failure = msg.message;
          return;
        }
        if (settled) return;
        settled = true;
        wasReady = true;
        clearTimeout(readyTimer);
        this.failedStarts = 0;
        const ep = endpointOf(msg);
        this.current = ep;
        this.previous = ep;
        this.emit("ready", ep);
        resolve(ep);
      });

      child.on("error", (err) => {
        // No pid: the process never existed, and no "exit" will follow.
        if (child.pid === undefined && this.child === child) this.child = null;
        fail(new Error(`core process could not start: ${err.message}`));
      });

      void ended.then(({ code, signal }) => {
        if (this.child === child) this.child = null;
        this.current = null;
        const expected = this.stopping !== null || this.stopped;
        if (!wasReady) {
          this.failedStarts += 1;
          const why = failure ?? lastLine(this.stderrTail) ?? "no output";
          fail(new Error(`core exited before it was ready (${describeExit(code, signal)}): ${why}`));
        }
        this.emit("exit", { code, signal, expected });
        if (expected) return;
        // A run that stayed up a while was healthy: start counting crashes afresh.
        if (wasReady && Date.now() - startedAt >= this.opts.stableAfterMs) this.crashes = 0;
        this.crashes += 1;
        if (!wasReady && this.failedStarts >= this.opts.maxFailedStarts) {
          this.emit(
            "failed",
            new Error(
              `core failed to start ${this.failedStarts} times in a row; giving up: ${failure ?? lastLine(this.stderrTail) ?? describeExit(code, signal)}`,
            ),
          );
          return;
        }
        // The first launch's failure is reported to start()'s caller, which decides.
        if (!wasReady && this.previous === null) return;
        this.scheduleRestart();
      });
    });
  }

  private scheduleRestart(): void {
    const attempt = this.crashes;
    const delayMs = backoffDelay(attempt, this.opts.backoff);
    this.emit("restarting", { attempt, delayMs });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopped || this.stopping) return;
      // A failed relaunch is handled by the exit handler (next back-off step or `failed`).
      this.launch().catch(() => {});
    }, delayMs);
  }

  /**
   * Graceful stop: asks the core to shut down (stop admitting, drain, flush), waits up to
   * `timeoutMs`, then SIGKILL. Calling it again while stopping returns the same promise.
   */
  stop(timeoutMs = this.opts.stopTimeoutMs): Promise<StopResult> {
    if (this.stopping) return this.stopping;
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      return Promise.resolve({ code: child?.exitCode ?? null, signal: child?.signalCode ?? null, expected: true, graceful: true });
    }
    this.stopping = new Promise<StopResult>((resolve) => {
      let graceful = true;
      const killTimer = setTimeout(() => {
        graceful = false;
        child.kill("SIGKILL");
      }, timeoutMs);
      void this.childEnded?.then(({ code, signal }) => {
        clearTimeout(killTimer);
        this.stopping = null;
        resolve({ code, signal, expected: true, graceful });
      });
      const req: MainToCore = { type: "shutdown" };
      if (child.connected) child.send(req, (err) => err && child.kill("SIGTERM"));
      else child.kill("SIGTERM");
    });
    return this.stopping;
  }

  /** Immediate stop (the second quit): SIGKILL, no draining. */
  kill(): void {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    this.child?.kill("SIGKILL");
  }
}

/** Both output pipes closed, or 2 s passed. */
function outputDrained(child: ChildProcess): Promise<void> {
  const closed = (s: NodeJS.ReadableStream | null) =>
    s === null || (s as { closed?: boolean }).closed ? Promise.resolve() : new Promise<void>((r) => s.once("close", () => r()));
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((r) => {
    timer = setTimeout(r, 2000);
  });
  return Promise.race([Promise.all([closed(child.stdout), closed(child.stderr)]).then(() => undefined), bound]).finally(() => clearTimeout(timer));
}

function endpointOf(msg: CoreReady): CoreEndpoint {
  return { url: msg.url, token: msg.token, pid: msg.pid, dataDir: msg.dataDir };
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

function lastLine(text: string): string | null {
  const lines = text
    .trim()
    .split("\n")
    .filter((l) => l.trim() !== "");
  return lines.length ? lines[lines.length - 1].trim() : null;
}
