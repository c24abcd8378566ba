/**
 * One MCP server's life in the core: started when first needed, its tool list fetched once and
 * refreshed on `notifications/tools/list_changed`, restarted with back-off after a crash, stopped
 * for good when the app quits (the SDK's stdio transport ends stdin, then SIGTERM, then SIGKILL,
 * and waits for the exit: no orphan process).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ToolServerStatus } from "../api/tools.js";
import type { ServerConfig } from "./config.js";
import { maskerFor, type Masker } from "./secrets.js";
import type { McpResultLike } from "./result.js";

export interface ServerTimings {
  /** first wait before an automatic restart after a crash; doubles per crash in a row */
  backoffMs: number;
  maxBackoffMs: number;
  /** how long starting (spawn + initialize + tools/list) may take */
  startTimeoutMs: number;
  /** automatic restarts in a row before waiting for the next need */
  maxAutoRestarts: number;
}

export const DEFAULT_TIMINGS: ServerTimings = { backoffMs: 1_000, maxBackoffMs: 60_000, startTimeoutMs: 30_000, maxAutoRestarts: 5 };

const STDERR_LINES = 40;
const STDERR_LINE_CHARS = 400;
/** Up this long, a server's earlier crashes no longer lengthen its back-off. */
const STABLE_MS = 60_000;

export type ServerChange = "status" | "tools";

export class McpServerRuntime {
  status: ToolServerStatus = "stopped";
  error: string | null = null;
  restarts = 0;
  tools: Tool[] = [];
  readonly stderrTail: string[] = [];
  readonly mask: Masker;
  private client: Client | null = null;
  private transport: Transport | null = null;
  private starting: Promise<void> | null = null;
  private closed = false;
  private failuresInRow = 0;
  private startedAt = 0;
  private nextTryAt = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private stderrPartial = "";
  /** bumped on every start and stop, so late callbacks of an old connection are ignored */
  private generation = 0;

  constructor(
    readonly config: ServerConfig,
    private readonly timings: ServerTimings,
    private readonly onChange: (change: ServerChange) => void,
    private readonly logLine: (line: string) => void = (l) => console.warn(l),
  ) {
    this.mask = maskerFor(config);
  }

  get pid(): number | null {
    return this.transport instanceof StdioClientTransport ? this.transport.pid : null;
  }

  /**
   * Starts the server unless it runs (or is starting: then waits for that). A server that failed
   * is tried again only after its back-off, unless `force` (a call the user approved).
   */
  async ensureStarted(force = false): Promise<void> {
    if (this.closed) return;
    if (this.status === "running" && this.client) return;
    if (this.starting) return this.starting;
    if (this.status === "failed" && !force && Date.now() < this.nextTryAt) return;
    this.clearRestart();
    this.starting = this.start().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async start(): Promise<void> {
    const gen = ++this.generation;
    this.setStatus("starting", null);
    const client = new Client(
      { name: "clawrl-desktop", version: "1" },
      {
        capabilities: {},
        listChanged: {
          tools: {
            debounceMs: 50,
            onChanged: (err, tools) => {
              if (gen !== this.generation) return;
              if (err) return this.log(`could not refresh its tool list: ${err.message}`);
              if (tools) {
                this.tools = tools;
                this.onChange("tools");
              }
            },
          },
        },
      },
    );
    const transport = this.makeTransport();
    this.client = client;
    this.transport = transport;
    client.onclose = () => this.closedUnderUs(gen);
    client.onerror = (err) => {
      // While starting, the start's own error says it (once).
      if (gen === this.generation && this.status === "running") this.log(`transport error: ${err.message}`);
    };
    try {
      await client.connect(transport, { timeout: this.timings.startTimeoutMs });
      const tools = await listAllTools(client, this.timings.startTimeoutMs);
      if (gen !== this.generation) return;
      this.tools = tools;
      this.startedAt = Date.now();
      this.setStatus("running", null);
      this.onChange("tools");
    } catch (err) {
      if (gen !== this.generation) return;
      this.generation++;
      this.client = null;
      this.transport = null;
      await client.close().catch(() => undefined);
      this.failed(this.startError(err));
    }
  }

  private makeTransport(): Transport {
    const c = this.config;
    if (c.transport === "http") return new StreamableHTTPClientTransport(new URL(c.url!), { requestInit: { headers: c.headers } });
    const t = new StdioClientTransport({ command: c.command!, args: c.args, env: c.env, ...(c.cwd ? { cwd: c.cwd } : {}), stderr: "pipe" });
    t.stderr?.on("data", (d: Buffer) => this.takeStderr(d.toString("utf8")));
    return t;
  }

  private takeStderr(chunk: string): void {
    const lines = (this.stderrPartial + chunk).split(/\r?\n/);
    this.stderrPartial = lines.pop() ?? "";
    if (this.stderrPartial.length > STDERR_LINE_CHARS) {
      lines.push(this.stderrPartial);
      this.stderrPartial = "";
    }
    for (const l of lines) {
      if (!l.trim()) continue;
      // Masked as it arrives: the tail is shown in the UI and written into errors.
      this.stderrTail.push(this.mask(l.length > STDERR_LINE_CHARS ? `${l.slice(0, STDERR_LINE_CHARS)}…` : l));
    }
    if (this.stderrTail.length > STDERR_LINES) this.stderrTail.splice(0, this.stderrTail.length - STDERR_LINES);
  }

  private startError(err: unknown): string {
    const e = err as NodeJS.ErrnoException;
    let why: string;
    if (e?.code === "ENOENT" && this.config.transport === "stdio") why = `command not found: ${this.config.command}`;
    else if (e?.code === "EACCES" && this.config.transport === "stdio") why = `command not executable: ${this.config.command}`;
    else why = `could not start: ${e?.message ?? String(err)}`;
    const last = this.stderrTail.at(-1);
    return this.mask(last ? `${why} (stderr: ${last})` : why);
  }

  /** The connection closed without us closing it: the server crashed or exited. */
  private closedUnderUs(gen: number): void {
    if (gen !== this.generation || this.closed) return;
    this.generation++;
    this.client = null;
    this.transport = null;
    // this.tools is kept: the list stays visible while the server restarts.
    if (this.startedAt && Date.now() - this.startedAt > STABLE_MS) this.failuresInRow = 0;
    const last = this.stderrTail.at(-1);
    this.failed(this.mask(`the server exited${this.status === "starting" ? " while starting" : ""}${last ? ` (stderr: ${last})` : ""}`));
    if (this.failuresInRow <= this.timings.maxAutoRestarts) {
      const wait = this.nextTryAt - Date.now();
      this.restartTimer = setTimeout(
        () => {
          this.restartTimer = null;
          this.restarts++;
          void this.ensureStarted(true);
        },
        Math.max(0, wait),
      );
      this.restartTimer.unref();
    }
  }

  private failed(why: string): void {
    this.failuresInRow++;
    this.nextTryAt = Date.now() + Math.min(this.timings.maxBackoffMs, this.timings.backoffMs * 2 ** (this.failuresInRow - 1));
    this.log(why);
    this.setStatus("failed", why);
  }

  /** Runs one call (the caller has checked permission). Throws on transport failure or timeout. */
  async call(tool: string, args: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal): Promise<McpResultLike> {
    await this.ensureStarted(true);
    const client = this.client;
    if (!client || this.status !== "running") throw new Error(this.error ?? "the server is not running");
    const restartsBefore = this.restarts;
    const r = (await client.callTool({ name: tool, arguments: args }, undefined, {
      timeout: timeoutMs,
      maxTotalTimeout: timeoutMs,
      ...(signal ? { signal } : {}),
    })) as McpResultLike;
    if (this.restarts === restartsBefore) this.failuresInRow = 0;
    return r;
  }

  async stop(forGood = false): Promise<void> {
    if (forGood) this.closed = true;
    this.clearRestart();
    this.generation++;
    const client = this.client;
    this.client = null;
    this.transport = null;
    if (client) await client.close().catch(() => undefined);
    if (this.starting) await this.starting.catch(() => undefined);
    if (this.status !== "stopped") this.setStatus("stopped", null);
  }

  private clearRestart(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
  }

  private setStatus(status: ToolServerStatus, error: string | null): void {
    if (this.status === status && this.error === error) return;
    this.status = status;
    this.error = error;
    this.onChange("status");
  }

  private log(message: string): void {
    this.logLine(`mcp server '${this.config.name}': ${this.mask(message)}`);
  }
}

async function listAllTools(client: Client, timeoutMs: number): Promise<Tool[]> {
  if (!client.getServerCapabilities()?.tools) return [];
  const out: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const r = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
    out.push(...r.tools);
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return out;
}
