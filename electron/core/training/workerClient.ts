import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { appRoot } from "../config/paths.js";
import { describeProtocolError, replySchema, type Command, type InterimReply, type MemoryPlanSummary, type Reply } from "../../../trainer/protocol.js";

/** Distributes Omit over a union (plain Omit would collapse the command union). */
type DistOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type CommandBody = DistOmit<Command, "id">;

/** Final reply type for each command. */
interface FinalOf {
  init: Extract<Reply, { type: "ready" }>;
  train: Extract<Reply, { type: "result" }>;
  evaluate: Extract<Reply, { type: "evaluation" }>;
  prepare: Extract<Reply, { type: "prepared" }>;
  load: Extract<Reply, { type: "loaded" }>;
  verify: Extract<Reply, { type: "verified" }>;
  memory: Extract<Reply, { type: "memory" }>;
  shutdown: never;
}

export class WorkerError extends Error {
  constructor(
    message: string,
    /** Set when the trainer refused a model that does not fit this machine's memory. */
    readonly plan?: MemoryPlanSummary,
  ) {
    super(message);
    this.name = "WorkerError";
  }
}

/** The worker died (killed, crashed, out of memory) while a command was pending. */
export class WorkerExitError extends WorkerError {
  constructor(
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
  ) {
    super(`the trainer process exited (${signal ?? `code ${code}`})`);
    this.name = "WorkerExitError";
  }
}

export interface WorkerSpawnOptions {
  /** OS niceness for the trainer (higher = lower priority); default 19, the lowest priority. */
  niceness?: number;
  env?: NodeJS.ProcessEnv;
  /** stderr lines of the worker (logs); default: prefixed to the core's stderr */
  onLog?: (line: string) => void;
}

/** How to run trainer/worker: the TypeScript source through tsx, or a bundled JS next to the core. */
function workerEntry(): { entry: string; execArgv: string[] } {
  // Bundled (electron-vite): out/main/trainer-worker.js, beside the core's entry or one level up
  // when this code landed in a shared chunk.
  for (const bundled of [path.join(import.meta.dirname, "trainer-worker.js"), path.join(import.meta.dirname, "..", "trainer-worker.js")]) {
    if (fs.existsSync(bundled)) return { entry: bundled, execArgv: [] };
  }
  return { entry: path.join(appRoot, "trainer", "worker.ts"), execArgv: ["--import", "tsx"] };
}

/**
 * One trainer child process and a typed request/reply channel to it. Commands are answered in
 * order; if the process exits, every pending command fails with WorkerExitError.
 */
export class WorkerClient {
  readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(r: Reply): void; reject(e: Error): void; onProgress?: (r: InterimReply) => void }>();
  private exited: WorkerExitError | null = null;
  /** Where the worker's output and its unaddressed messages go (onLog, else the core's stderr). */
  private readonly log: (line: string) => void;
  readonly exit: Promise<WorkerExitError>;

  constructor(opts: WorkerSpawnOptions = {}) {
    const { entry, execArgv } = workerEntry();
    this.child = fork(entry, [], {
      execArgv,
      env: { ...process.env, ...opts.env },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "advanced",
    });
    if (this.child.pid !== undefined) {
      try {
        // Serving must not wait for training: the trainer yields the CPU to the core.
        os.setPriority(this.child.pid, opts.niceness ?? 19);
      } catch {
        // Not permitted on this system: training still works, at normal priority.
      }
    }
    const log = (this.log = opts.onLog ?? ((line: string) => process.stderr.write(`[trainer] ${line}\n`)));
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) log(line);
      }
    };
    this.child.stdout?.on("data", onData);
    this.child.stderr?.on("data", onData);
    this.child.on("message", (raw) => this.onMessage(raw));
    this.exit = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        const err = new WorkerExitError(code, signal);
        this.exited = err;
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
        resolve(err);
      });
    });
    this.child.on("error", () => undefined); // the exit handler reports it
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exited === null;
  }

  private onMessage(raw: unknown): void {
    const r = replySchema.safeParse(raw);
    if (!r.success) {
      this.log(`bad reply: ${describeProtocolError(r.error)}`);
      return;
    }
    const msg = r.data;
    if (msg.id === null) {
      this.log(msg.type === "error" ? msg.message : msg.type);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === "progress" || msg.type === "work") {
      p.onProgress?.(msg);
      return;
    }
    this.pending.delete(msg.id);
    if (msg.type === "error") p.reject(new WorkerError(msg.message, msg.plan));
    else p.resolve(msg);
  }

  /** Sends a command and waits for its final reply. */
  request<C extends CommandBody>(cmd: C, onProgress?: (r: InterimReply) => void): Promise<FinalOf[C["type"]]> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: Reply) => void, reject, onProgress });
      this.child.send({ ...cmd, id }, (err) => {
        if (err && this.pending.delete(id)) reject(new WorkerError(`cannot reach the trainer: ${err.message}`));
      });
    });
  }

  private suspended = false;
  /** A suspended trainer is resumed if the core exits first: stopped, it could not see its parent go (worker.ts "disconnect"). */
  private readonly resumeOnExit = () => {
    try {
      this.child.kill("SIGCONT");
    } catch {
      // already gone
    }
  };

  /**
   * Suspends the process (SIGSTOP: it holds its memory, takes no CPU) until resume(). POSIX
   * only; false where it did not take (Windows, an exited process).
   */
  suspend(): boolean {
    if (this.suspended || this.exited || process.platform === "win32") return this.suspended;
    try {
      this.suspended = this.child.kill("SIGSTOP");
    } catch {
      this.suspended = false;
    }
    if (this.suspended) process.once("exit", this.resumeOnExit);
    return this.suspended;
  }

  resume(): void {
    if (!this.suspended) return;
    this.suspended = false;
    process.off("exit", this.resumeOnExit);
    this.resumeOnExit();
  }

  get isSuspended(): boolean {
    return this.suspended;
  }

  /** Asks the worker to exit; kills it after `timeoutMs`. */
  async stop(timeoutMs = 3000): Promise<void> {
    if (this.exited) return;
    // A suspended process would not read the shutdown message.
    this.resume();
    try {
      this.child.send({ type: "shutdown", id: this.nextId++ });
    } catch {
      // channel already closed
    }
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    await this.exit;
    clearTimeout(timer);
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.resume();
    this.child.kill(signal);
  }
}
