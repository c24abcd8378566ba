/**
 * mcp.json: the MCP servers the core hosts, in the shape Claude Desktop, Cursor, Cline and LM
 * Studio use (`{"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "headers"}}}`),
 * so a user pastes the config they already have. Our own keys are optional and per server:
 * `disabled` (Cline's; `enabled: false` is read too), `disabledTools`, `alwaysAllow` (Cline's:
 * the tools the user allowed for good) and `timeoutMs` (a call's limit; Cline's `timeout` in
 * seconds is read too). Keys we do not know are kept as they are when the app rewrites the file.
 *
 * A file that cannot be read is an error the app reports (configError) while it runs without
 * tools; one bad server entry leaves the others usable.
 */
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";

export const DEFAULT_TIMEOUT_MS = 60_000;

/** Server names become the prefix of the names the model sees (`server__tool`, OpenAI's function-name alphabet). */
const SERVER_NAME = /^[A-Za-z0-9_-]{1,48}$/;

const common = {
  disabled: z.boolean().optional(),
  enabled: z.boolean().optional(),
  disabledTools: z.array(z.string()).optional(),
  alwaysAllow: z.array(z.string()).optional(),
  timeoutMs: z.number().int().min(100).max(3_600_000).optional(),
  timeout: z.number().positive().max(3600).optional(),
};

const StdioEntry = z
  .object({
    type: z.literal("stdio").optional(),
    command: z.string().min(1, "must not be empty"),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
    ...common,
  })
  .loose();

const HttpEntry = z
  .object({
    type: z.enum(["http", "streamable-http", "streamableHttp"]).optional(),
    url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
    headers: z.record(z.string(), z.string()).optional(),
    ...common,
  })
  .loose();

/** One server's entry as written in mcp.json (unknown keys kept): a local program or a Streamable HTTP server. */
export type ServerEntry = z.infer<typeof StdioEntry> | z.infer<typeof HttpEntry>;

/** A valid server, as the host runs it. */
export interface ServerConfig {
  name: string;
  transport: "stdio" | "http";
  command?: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  url?: string;
  headers: Record<string, string>;
  enabled: boolean;
  disabledTools: string[];
  alwaysAllow: string[];
  timeoutMs: number;
}

export interface LoadedConfig {
  file: string;
  servers: ServerConfig[];
  /** servers whose entry is invalid: name → why (listed as failed; the rest run) */
  invalid: Map<string, string>;
  /** the whole file's problems in words (null: none) */
  error: string | null;
  /** the parsed file, kept so a rewrite preserves what we do not read */
  raw: { mcpServers: Record<string, unknown>; [k: string]: unknown };
}

export class ToolConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolConfigError";
  }
}

export function configPath(dataDir: string): string {
  return path.join(dataDir, "mcp.json");
}

function issueText(err: z.ZodError): string {
  const i = err.issues[0];
  const where = i.path.length ? `'${i.path.join(".")}': ` : "";
  return `${where}${i.message}`;
}

/** Checks a server's name and entry; returns the config the host runs, or throws ToolConfigError. */
export function parseServer(name: string, entry: unknown): ServerConfig {
  if (!SERVER_NAME.test(name) || name.includes("__")) {
    throw new ToolConfigError(`server name '${name}' cannot be used: 1-48 letters, digits, '_' or '-', no '__' (the model sees tools as server__tool)`);
  }
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) throw new ToolConfigError(`server '${name}': must be an object`);
  // Picked by key rather than a union, so the error names the field that is wrong.
  const parse = <T>(schema: z.ZodType<T>): T => {
    const r = schema.safeParse(entry);
    if (!r.success) throw new ToolConfigError(`server '${name}': ${issueText(r.error)}`);
    return r.data;
  };
  const ours = (e: z.infer<typeof StdioEntry> | z.infer<typeof HttpEntry>) => ({
    name,
    enabled: e.disabled !== undefined ? !e.disabled : (e.enabled ?? true),
    disabledTools: e.disabledTools ?? [],
    alwaysAllow: e.alwaysAllow ?? [],
    timeoutMs: e.timeoutMs ?? (e.timeout !== undefined ? Math.round(e.timeout * 1000) : DEFAULT_TIMEOUT_MS),
  });
  if ("command" in entry) {
    const e = parse(StdioEntry);
    return { ...ours(e), transport: "stdio", command: e.command, args: e.args ?? [], env: e.env ?? {}, ...(e.cwd ? { cwd: e.cwd } : {}), headers: {} };
  }
  if ("url" in entry) {
    const e = parse(HttpEntry);
    return { ...ours(e), transport: "http", url: e.url, args: [], env: {}, headers: e.headers ?? {} };
  }
  throw new ToolConfigError(`server '${name}': needs "command" (a local program) or "url" (a Streamable HTTP server)`);
}

/** Parses mcp.json's text; never throws: problems are in `error` and `invalid`. */
export function parseConfig(file: string, text: string | null): LoadedConfig {
  const empty = (error: string | null): LoadedConfig => ({ file, servers: [], invalid: new Map(), error, raw: { mcpServers: {} } });
  if (text === null || text.trim() === "") return empty(null);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return empty(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) return empty(`${file} must hold a JSON object like {"mcpServers": {...}}`);
  const obj = json as Record<string, unknown>;
  const ms = obj.mcpServers ?? {};
  if (ms === null || typeof ms !== "object" || Array.isArray(ms)) return empty(`${file}: "mcpServers" must be an object of servers by name`);
  const servers: ServerConfig[] = [];
  const invalid = new Map<string, string>();
  for (const [name, entry] of Object.entries(ms as Record<string, unknown>)) {
    try {
      servers.push(parseServer(name, entry));
    } catch (err) {
      invalid.set(name, (err as Error).message);
    }
  }
  const error = invalid.size ? `${file}: ${[...invalid.values()].join("; ")}` : null;
  return { file, servers, invalid, error, raw: { ...obj, mcpServers: ms as Record<string, unknown> } };
}

export function loadConfig(file: string): LoadedConfig {
  let text: string | null;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") text = null;
    else return { ...parseConfig(file, null), error: `${file} cannot be read: ${(err as Error).message}` };
  }
  return parseConfig(file, text);
}

/**
 * Applies `change` to the file's raw servers (read fresh, so hand edits made while the app runs
 * are kept) and writes it back atomically, owner-only (env and headers may hold secrets).
 * Throws ToolConfigError when the file cannot be parsed: the app does not overwrite what the
 * user must fix.
 */
export function updateConfig(file: string, change: (servers: Record<string, Record<string, unknown>>) => void): LoadedConfig {
  const now = loadConfig(file);
  if (now.error && now.invalid.size === 0) throw new ToolConfigError(`${now.error}; fix or remove the file first`);
  const servers = now.raw.mcpServers as Record<string, Record<string, unknown>>;
  change(servers);
  const raw = { ...now.raw, mcpServers: servers };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomicSync(file, `${JSON.stringify(raw, null, 2)}\n`, 0o600);
  return loadConfig(file);
}

/** Sets a server on or off in the key the user's entry already uses (`enabled` or `disabled`). */
export function setServerEnabled(entry: Record<string, unknown>, enabled: boolean): void {
  if ("enabled" in entry && !("disabled" in entry)) entry.enabled = enabled;
  else if (enabled) delete entry.disabled;
  else entry.disabled = true;
}

/** Adds or removes `item` in the string list `entry[key]` (the key is dropped when the list empties). */
export function setListed(entry: Record<string, unknown>, key: "disabledTools" | "alwaysAllow", item: string, listed: boolean): void {
  const list = Array.isArray(entry[key]) ? (entry[key] as unknown[]).filter((x): x is string => typeof x === "string") : [];
  const next = listed ? (list.includes(item) ? list : [...list, item]) : list.filter((x) => x !== item);
  if (next.length) entry[key] = next;
  else delete entry[key];
}
