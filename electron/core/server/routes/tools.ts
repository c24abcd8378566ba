import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { parseBody } from "../errors.js";
import { abortWhenClientLeaves } from "../clientAbort.js";
import type { OpenAiToolsReply, ToolCallReply, ToolsReply } from "../../api/tools.js";
import type { ToolHost } from "../../tools/host.js";

/** How long a tool list request waits for servers that are starting (they go on; SSE `tools` tells the rest). */
const LIST_WAIT_MS = 10_000;
/** The chat's agent loop needs the tools before it asks the model: it waits as long as a server may take to start. */
const OPENAI_WAIT_MS = 30_000;

const AddServerBody = z.strictObject({
  name: z.string().min(1).max(48),
  config: z.record(z.string(), z.unknown()),
});
const PatchServerBody = z.strictObject({ enabled: z.boolean() });
const PatchToolBody = z
  .strictObject({ enabled: z.boolean().optional(), permission: z.enum(["ask", "always"]).optional() })
  .refine((b) => b.enabled !== undefined || b.permission !== undefined, "give enabled or permission");
const CallBody = z.strictObject({
  name: z.string().min(1).max(200),
  arguments: z.union([z.string().max(1_000_000), z.record(z.string(), z.unknown())]),
  approval: z.enum(["once", "always"]).optional(),
  callId: z.string().max(256).optional(),
  sessionId: z.string().max(256).optional(),
  turnId: z.string().max(256).optional(),
});

/**
 * /api/tools (issue 29): the MCP servers the core hosts, their tools and the user's permissions,
 * changes to mcp.json, and one call the user allowed (electron/core/api/tools.ts is the contract).
 * The host's refusals (ToolRequestError) are answered by the server's one mapping (server/errors.ts).
 */
export function registerToolRoutes(app: FastifyInstance, host: ToolHost): void {
  app.get("/api/tools", async (): Promise<ToolsReply> => {
    await host.startAll(LIST_WAIT_MS);
    return host.view();
  });

  app.get("/api/tools/openai", async (): Promise<OpenAiToolsReply> => {
    await host.startAll(OPENAI_WAIT_MS);
    return host.openAiTools();
  });

  app.post("/api/tools/servers", async (req, reply) => {
    const body = parseBody(AddServerBody, req.body);
    const view = host.addServer(body.name, body.config);
    return reply.status(201).send(view satisfies ToolsReply);
  });

  app.delete<{ Params: { name: string } }>("/api/tools/servers/:name", async (req): Promise<ToolsReply> => host.removeServer(req.params.name));

  app.patch<{ Params: { name: string } }>("/api/tools/servers/:name", async (req): Promise<ToolsReply> => {
    const body = parseBody(PatchServerBody, req.body);
    return host.setServerEnabled(req.params.name, body.enabled);
  });

  app.patch<{ Params: { name: string; tool: string } }>("/api/tools/servers/:name/tools/:tool", async (req): Promise<ToolsReply> => {
    const body = parseBody(PatchToolBody, req.body);
    return host.setTool(req.params.name, req.params.tool, body);
  });

  app.post("/api/tools/call", async (req, reply): Promise<ToolCallReply> => {
    const body = parseBody(CallBody, req.body);
    // A stopped answer stops its call: the chat aborts the request, the server is told to cancel.
    return host.call(body, abortWhenClientLeaves(reply));
  });
}
