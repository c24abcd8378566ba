/**
 * Who may run a call: the core never runs a tool without the user's approval of this call or a
 * standing "always" for the tool, whatever the model or a request says.
 */
import type { ToolPermission } from "../api/tools.js";
import type { ServerConfig } from "./config.js";

export type Approval = "once" | "always";

/** The user's standing permission for a tool (mcp.json's alwaysAllow). */
export function permissionOf(server: Pick<ServerConfig, "alwaysAllow">, tool: string): ToolPermission {
  return server.alwaysAllow.includes(tool) ? "always" : "ask";
}

/** How a call is allowed, or null when it must wait for the user (403 approval_required). */
export function allowedBy(approval: Approval | undefined, standing: ToolPermission): Approval | "standing" | null {
  if (approval) return approval;
  return standing === "always" ? "standing" : null;
}
