/**
 * The core's tools (issue 29, electron/core/api/tools.ts): the servers it hosts, their tools,
 * the user's standing permissions, and one approved call. Every request the Tools page and the
 * chat's agent loop make about tools goes through here.
 */
import type {
  AddToolServerRequest,
  OpenAiToolsReply,
  ToolCallReply,
  ToolCallRequest,
  ToolPermission,
  ToolServerView,
  ToolsReply,
  ToolView,
} from "../../../electron/core/api/tools.js";
import { errorFromResponse, type CoreClient } from "./client.js";

export type { OpenAiToolsReply, ToolCallReply, ToolCallRequest, ToolPermission, ToolServerView, ToolsReply, ToolView };

/** The answer a denied call gets, sent to the model as the call's `tool` result. */
export const DECLINED = "The user declined this call.";

/** What the tool routes need of the client (CoreClient has it). */
export type ToolsTransport = Pick<CoreClient, "json" | "raw">;

const serverPath = (name: string) => `/api/tools/servers/${encodeURIComponent(name)}`;

export const loadTools = (c: ToolsTransport) => c.json<ToolsReply>("GET", "/api/tools");

/** The enabled tools as OpenAI `tools` (empty when none are enabled or the core has no tools). */
export const loadOpenAiTools = (c: ToolsTransport) => c.json<OpenAiToolsReply>("GET", "/api/tools/openai").then((r) => r.tools ?? []);

/** A server's entry as Claude Desktop's `mcpServers` holds it: a command to start, or a URL. */
export type ServerEntry = { command: string; args?: string[]; env?: Record<string, string>; cwd?: string } | { url: string; headers?: Record<string, string> };

// Each change answers with the whole ToolsReply, read after mcp.json was rewritten.

/** Adds a server to mcp.json (its entry as mcp.json holds it). */
export const addServer = (c: ToolsTransport, name: string, config: ServerEntry) =>
  c.json<ToolsReply>("POST", "/api/tools/servers", { name, config } satisfies AddToolServerRequest);

export const setServerEnabled = (c: ToolsTransport, name: string, enabled: boolean) => c.json<ToolsReply>("PATCH", serverPath(name), { enabled });

export const removeServer = (c: ToolsTransport, name: string) => c.json<ToolsReply>("DELETE", serverPath(name));

/** Turns one tool on or off, or sets its standing permission ("ask" revokes an "always"). */
export const patchTool = (c: ToolsTransport, server: string, tool: string, patch: { enabled?: boolean; permission?: ToolPermission }) =>
  c.json<ToolsReply>("PATCH", `${serverPath(server)}/tools/${encodeURIComponent(tool)}`, patch);

/** Runs one call (the core refuses it without an approval or a standing permission: 403 approval_required). */
export async function callTool(c: ToolsTransport, req: ToolCallRequest, signal?: AbortSignal): Promise<ToolCallReply> {
  const res = await c.raw("/api/tools/call", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(req), signal });
  if (!res.ok) throw await errorFromResponse(res, "The tool call");
  return (await res.json()) as ToolCallReply;
}

/** The names the model sees (`server__tool`) that the user allowed for good. */
export function standingPermissions(reply: ToolsReply | null): Set<string> {
  const out = new Set<string>();
  for (const s of reply?.servers ?? []) for (const t of s.tools) if (t.permission === "always") out.add(t.qualifiedName);
  return out;
}

/** "files__list_directory" → server "files", tool "list_directory" (the first "__" splits them). */
export function splitToolName(qualified: string): { server: string; tool: string } {
  const i = qualified.indexOf("__");
  return i < 0 ? { server: "", tool: qualified } : { server: qualified.slice(0, i), tool: qualified.slice(i + 2) };
}
