/**
 * The core's MCP host: the servers of mcp.json, their tools as the UI and the model see them,
 * the user's standing permissions, and running one call that the user allowed. Servers start
 * when first needed (a tool list or a call asks for them), not with the app.
 */
import fs from "node:fs";
import path from "node:path";
import type { OpenAiToolsReply, ToolCallReply, ToolCallRequest, ToolServerView, ToolsReply, ToolView } from "../api/tools.js";
import type { CoreEvents } from "../api/events.js";
import { configPath, loadConfig, parseServer, setListed, setServerEnabled, updateConfig, type LoadedConfig, type ServerConfig } from "./config.js";
import { allowedBy, permissionOf, type Approval } from "./permissions.js";
import { cutResult, resultText } from "./result.js";
import { DEFAULT_TIMINGS, McpServerRuntime, type ServerTimings } from "./server.js";
import { summaryOf } from "./secrets.js";

/** A request the host refuses: the route answers it with this status and code. */
export class ToolRequestError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ToolRequestError";
  }
}

export interface ToolHostOptions {
  dataDir: string;
  /** tells the UI that a server's status or tools changed (SSE `tools`) */
  emit?: (payload: CoreEvents["tools"]) => void;
  timings?: Partial<ServerTimings>;
  /** how many characters of a result the served model's context can hold */
  maxResultChars?: () => number;
  /** where servers' failures are logged (default: console.warn); `clawrl mcp list` prints them in its table instead */
  log?: (line: string) => void;
}

export const QUALIFIER = "__";

export function qualifiedName(server: string, tool: string): string {
  return `${server}${QUALIFIER}${tool}`;
}

/** What makes a server's process or connection: a change of any of it restarts the server. */
function connectionKey(c: ServerConfig): string {
  return JSON.stringify([c.transport, c.command, c.args, c.env, c.cwd, c.url, c.headers]);
}

export class ToolHost {
  readonly file: string;
  private config: LoadedConfig;
  private readonly runtimes = new Map<string, McpServerRuntime>();
  private readonly timings: ServerTimings;
  private readonly callLog: string;
  private closed = false;

  constructor(private readonly opts: ToolHostOptions) {
    this.file = configPath(opts.dataDir);
    this.callLog = path.join(opts.dataDir, "logs", "tools.jsonl");
    this.timings = { ...DEFAULT_TIMINGS, ...opts.timings };
    this.config = loadConfig(this.file);
    if (this.config.error) (opts.log ?? console.warn)(`tools: ${this.config.error}`);
    this.sync();
  }

  /** Reads mcp.json again (after a change by the routes, or by hand) and restarts what changed. */
  reload(): void {
    this.config = loadConfig(this.file);
    this.sync();
    this.emit(null, "config");
  }

  /** Brings the runtimes in line with the config: removed, disabled or changed servers stop. */
  private sync(): void {
    const wanted = new Map(this.config.servers.filter((s) => s.enabled).map((s) => [s.name, s]));
    for (const [name, rt] of this.runtimes) {
      const w = wanted.get(name);
      if (!w || connectionKey(w) !== connectionKey(rt.config)) {
        this.runtimes.delete(name);
        void rt.stop(true);
      }
    }
    if (this.closed) return;
    for (const [name, s] of wanted) {
      if (!this.runtimes.has(name)) this.runtimes.set(name, new McpServerRuntime(s, this.timings, (change) => this.emit(name, change), this.opts.log));
    }
  }

  private emit(server: string | null, change: CoreEvents["tools"]["change"]): void {
    this.opts.emit?.({ server, change });
  }

  /**
   * Starts every enabled server that is not running (a failed one after its back-off), in
   * parallel; waits for them at most `waitMs` (the rest go on starting: SSE `tools` says when).
   */
  async startAll(waitMs = Infinity): Promise<void> {
    const all = Promise.all([...this.runtimes.values()].map((rt) => rt.ensureStarted()));
    if (!Number.isFinite(waitMs)) return void (await all);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }

  /** GET /api/tools. */
  view(): ToolsReply {
    const servers: ToolServerView[] = this.config.servers.map((s) => this.serverView(s));
    for (const [name, why] of this.config.invalid) {
      servers.push({ name, transport: "stdio", summary: "", enabled: false, status: "failed", error: why, stderrTail: [], restarts: 0, tools: [], pid: null });
    }
    return { configPath: this.file, configError: this.config.error, servers };
  }

  private serverView(s: ServerConfig): ToolServerView {
    const rt = this.runtimes.get(s.name);
    const tools: ToolView[] = (rt?.tools ?? []).map((t) => ({
      name: t.name,
      qualifiedName: qualifiedName(s.name, t.name),
      description: rt!.mask(t.description ?? t.title ?? ""),
      inputSchema: t.inputSchema,
      enabled: !s.disabledTools.includes(t.name),
      permission: permissionOf(s, t.name),
    }));
    return {
      name: s.name,
      transport: s.transport,
      summary: summaryOf(s),
      enabled: s.enabled,
      status: rt?.status ?? "stopped",
      error: rt?.error ?? null,
      stderrTail: rt ? [...rt.stderrTail] : [],
      restarts: rt?.restarts ?? 0,
      tools,
      pid: rt?.pid ?? null,
    };
  }

  /** GET /api/tools/openai: enabled tools of enabled, running servers. */
  openAiTools(): OpenAiToolsReply {
    const tools: OpenAiToolsReply["tools"] = [];
    for (const s of this.config.servers) {
      if (!s.enabled) continue;
      for (const t of this.serverView(s).tools) {
        if (t.enabled) tools.push({ type: "function", function: { name: t.qualifiedName, description: t.description, parameters: t.inputSchema } });
      }
    }
    return { tools };
  }

  /** Child process ids of the running stdio servers (tests check none outlives close()). */
  pids(): number[] {
    return [...this.runtimes.values()].map((rt) => rt.pid).filter((p): p is number => p !== null);
  }

  // ---- changes (each rewrites mcp.json atomically, then reloads) ----

  private change(fn: (servers: Record<string, Record<string, unknown>>) => void): ToolsReply {
    try {
      updateConfig(this.file, fn);
    } catch (err) {
      if (err instanceof ToolRequestError) throw err;
      throw new ToolRequestError(409, "config_invalid", (err as Error).message);
    }
    this.reload();
    return this.view();
  }

  private entryOf(servers: Record<string, Record<string, unknown>>, name: string): Record<string, unknown> {
    const e = Object.hasOwn(servers, name) ? servers[name] : undefined;
    if (!e || typeof e !== "object") throw new ToolRequestError(404, "not_found", `No MCP server named '${name}'.`);
    return e;
  }

  addServer(name: string, entry: Record<string, unknown>): ToolsReply {
    try {
      parseServer(name, entry);
    } catch (err) {
      throw new ToolRequestError(400, "invalid_value", (err as Error).message);
    }
    return this.change((servers) => {
      if (Object.hasOwn(servers, name)) throw new ToolRequestError(409, "server_exists", `An MCP server named '${name}' is configured already.`);
      servers[name] = entry;
    });
  }

  removeServer(name: string): ToolsReply {
    return this.change((servers) => {
      this.entryOf(servers, name);
      delete servers[name];
    });
  }

  setServerEnabled(name: string, enabled: boolean): ToolsReply {
    return this.change((servers) => setServerEnabled(this.entryOf(servers, name), enabled));
  }

  /** A tool on or off, and its standing permission ("ask" revokes an "always"). */
  setTool(name: string, tool: string, patch: { enabled?: boolean; permission?: "ask" | "always" }): ToolsReply {
    return this.change((servers) => {
      const e = this.entryOf(servers, name);
      if (patch.enabled !== undefined) setListed(e, "disabledTools", tool, !patch.enabled);
      if (patch.permission !== undefined) setListed(e, "alwaysAllow", tool, patch.permission === "always");
    });
  }

  // ---- one call ----

  /**
   * Runs a call the user allowed (this call, or the tool for good). Refused before the server
   * sees anything: an unknown tool (404), a disabled server or tool, or no approval (403).
   * A server's error, a crash during the call and a timeout are results (isError), not failures.
   */
  async call(req: ToolCallRequest, signal?: AbortSignal): Promise<ToolCallReply> {
    const started = Date.now();
    const cut = req.name.indexOf(QUALIFIER);
    const serverName = cut > 0 ? req.name.slice(0, cut) : "";
    const tool = cut > 0 ? req.name.slice(cut + QUALIFIER.length) : "";
    const s = this.config.servers.find((x) => x.name === serverName);
    if (!s || !tool) throw new ToolRequestError(404, "not_found", `Unknown tool '${req.name}' (tools are named server__tool; see GET /api/tools).`);
    if (!s.enabled) throw new ToolRequestError(403, "tool_disabled", `The MCP server '${s.name}' is disabled.`);
    const rt = this.runtimes.get(s.name);
    if (!rt) throw new ToolRequestError(409, "tools_closed", "The tools are shut down (the app is quitting).");
    await rt.ensureStarted(true);
    const known = rt.tools.some((t) => t.name === tool);
    if (!known && rt.status === "running") throw new ToolRequestError(404, "not_found", `The MCP server '${s.name}' has no tool '${tool}'.`);
    if (s.disabledTools.includes(tool)) throw new ToolRequestError(403, "tool_disabled", `The tool '${req.name}' is disabled.`);
    const how = allowedBy(req.approval, permissionOf(s, tool));
    if (!how)
      throw new ToolRequestError(
        403,
        "approval_required",
        `The call to '${req.name}' needs the user's approval (approval "once" or "always"), or a standing "always" for the tool.`,
      );
    if (req.approval === "always" && permissionOf(s, tool) !== "always") this.setTool(s.name, tool, { permission: "always" });

    const reply = (content: string, isError: boolean): ToolCallReply => {
      const { content: text, truncated } = cutResult(rt.mask(content), this.opts.maxResultChars?.() ?? 16_000);
      const r: ToolCallReply = { name: req.name, content: text, isError, truncated, ms: Date.now() - started };
      this.record(req, how, r);
      return r;
    };
    const args = parseArguments(req.arguments);
    if (typeof args === "string") return reply(args, true);
    if (!known) return reply(`The tool could not run: the MCP server '${s.name}' is not running (${rt.error ?? rt.status}).`, true);
    try {
      const r = await rt.call(tool, args, s.timeoutMs, signal);
      return reply(resultText(r), r.isError === true);
    } catch (err) {
      const e = err as { code?: unknown; message?: string };
      // Checked first: the SDK reports an aborted request with its timeout's code.
      if (signal?.aborted) return reply("The call was cancelled: the answer was stopped.", true);
      // -32001 is the SDK's RequestTimeout: it has sent notifications/cancelled to the server.
      if (e?.code === -32001) return reply(`The call timed out after ${formatSeconds(s.timeoutMs)} and was cancelled.`, true);
      if (e?.code === -32000) return reply(`The MCP server '${s.name}' stopped during the call (${rt.error ?? "connection closed"}).`, true);
      return reply(`The call failed: ${e?.message ?? String(err)}`, true);
    }
  }

  /** One line per call in logs/tools.jsonl: who allowed it, how it ended (not the arguments or the result). */
  private record(req: ToolCallRequest, how: Approval | "standing", r: ToolCallReply): void {
    try {
      fs.mkdirSync(path.dirname(this.callLog), { recursive: true });
      const line = {
        time: new Date().toISOString(),
        name: req.name,
        callId: req.callId ?? null,
        sessionId: req.sessionId ?? null,
        turnId: req.turnId ?? null,
        allowedBy: how,
        isError: r.isError,
        truncated: r.truncated,
        ms: r.ms,
      };
      fs.appendFileSync(this.callLog, `${JSON.stringify(line)}\n`, { mode: 0o600 });
    } catch (err) {
      console.warn(`tools: could not record a call: ${(err as Error).message}`);
    }
  }

  /** Stops every server and waits for their processes to exit. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    await Promise.all(all.map((rt) => rt.stop(true)));
  }
}

/** The call's arguments as an object, or why they are not one (a result the model reads). */
function parseArguments(a: ToolCallRequest["arguments"]): Record<string, unknown> | string {
  if (typeof a !== "string") return a;
  if (a.trim() === "") return {};
  try {
    const v: unknown = JSON.parse(a);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
    return "The call's arguments must be a JSON object.";
  } catch (err) {
    return `The call's arguments are not valid JSON: ${(err as Error).message}`;
  }
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
