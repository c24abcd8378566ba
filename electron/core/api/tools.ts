/**
 * /api/tools: the MCP servers the core hosts (issue 29), their tools, the user's standing
 * permissions, and running one call. The chat's agent loop lives in the renderer: it offers the
 * enabled tools to /v1/chat/completions (OpenAI `tools`, names `server__tool`), asks the user
 * about each call the model makes, and runs an allowed call through POST /api/tools/call. The
 * core refuses any call that carries neither the user's approval nor a standing permission.
 */

/** Where a server is in its life: started when first needed, restarted with back-off after a crash. */
export type ToolServerStatus = "stopped" | "starting" | "running" | "failed";

/** "ask": every call waits for the user (the default); "always": the user allowed this tool for good. */
export type ToolPermission = "ask" | "always";

export interface ToolView {
  /** the tool's name on its server */
  name: string;
  /** the name the model sees: `${server}__${tool}` */
  qualifiedName: string;
  description: string;
  /** JSON Schema of the arguments object */
  inputSchema: Record<string, unknown>;
  enabled: boolean;
  permission: ToolPermission;
}

export interface ToolServerView {
  name: string;
  transport: "stdio" | "http";
  /** the command line or URL, secrets (env values, header values) masked */
  summary: string;
  enabled: boolean;
  status: ToolServerStatus;
  /** why it failed or stopped, in words; null when running */
  error: string | null;
  /** the last lines the server wrote to stderr (stdio servers), env values masked */
  stderrTail: string[];
  restarts: number;
  tools: ToolView[];
  /** the process id of a running stdio server (null: not running, or an HTTP server) */
  pid?: number | null;
}

/** GET /api/tools */
export interface ToolsReply {
  /** the mcp.json the servers come from */
  configPath: string;
  /** a config that could not be read: the app runs without tools and says why */
  configError: string | null;
  servers: ToolServerView[];
}

/** GET /api/tools/openai: the enabled tools as OpenAI chat `tools`. */
export interface OpenAiToolsReply {
  tools: Array<{ type: "function"; function: { name: string; description: string; parameters: Record<string, unknown> } }>;
}

/**
 * The changes, each answered with the whole ToolsReply after mcp.json was rewritten (atomically):
 * POST /api/tools/servers {name, config} (201; config as in mcp.json: {command, args, env, cwd}
 * or {url, headers}); DELETE /api/tools/servers/:name; PATCH /api/tools/servers/:name {enabled};
 * PATCH /api/tools/servers/:name/tools/:tool {enabled?, permission?} ("ask" revokes "always").
 */
export interface AddToolServerRequest {
  name: string;
  config: Record<string, unknown>;
}

/** POST /api/tools/call */
export interface ToolCallRequest {
  /** `${server}__${tool}` as the model called it */
  name: string;
  /** the call's arguments: the model's JSON text or an object */
  arguments: string | Record<string, unknown>;
  /** the user's answer for this call; absent: only a standing permission lets it run (else 403 approval_required) */
  approval?: "once" | "always";
  /** the model's tool_call id, the session and the turn that made the call (recorded with the result) */
  callId?: string;
  sessionId?: string;
  turnId?: string;
}

export interface ToolCallReply {
  name: string;
  /** the result as text for the `tool` message (cut to fit the context; `truncated` says so) */
  content: string;
  /** the server answered with an error (or the call failed or timed out): still a result for the model */
  isError: boolean;
  truncated: boolean;
  ms: number;
}
