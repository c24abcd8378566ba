import path from "node:path";
import { UsageError, stringOpt, type CommandSpec } from "../command.js";
import { defaultDataDir } from "../../config/paths.js";
import { ToolHost } from "../../tools/host.js";
import type { ToolServerView, ToolsReply } from "../../api/tools.js";

export const mcp: CommandSpec = {
  name: "mcp",
  usage: "list [--data-dir DIR] [--json]",
  summary:
    "Start each MCP server configured in <data dir>/mcp.json and print its status and tools (name and one-line description), then stop them. " +
    "A server that cannot start (a missing command, a crash, an unreachable URL) is a line that says why; the command still exits 0.",
  options: {
    "data-dir": { type: "string", value: "DIR", description: "data dir whose mcp.json to read (default: $CLAWRL_HOME or the platform's app-data dir)" },
    json: { type: "boolean", description: "print GET /api/tools's reply (configPath, configError, servers with status, error, tools) as JSON" },
  },
  positionals: { min: 1, max: 1, names: "list" },
  async run(args) {
    if (args.positionals[0] !== "list") throw new UsageError(`unknown subcommand '${args.positionals[0]}' (only 'list')`);
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    // Failures are in the table (or the JSON), not also on stderr.
    const host = new ToolHost({ dataDir, log: () => undefined });
    let view: ToolsReply;
    try {
      await host.startAll();
      view = host.view();
    } finally {
      await host.close();
    }
    console.log(args.values.json ? JSON.stringify(view, null, 2) : formatList(view));
    return 0;
  },
};

function oneLine(text: string, max = 100): string {
  const first = text.trim().split(/\n|(?<=\.)\s/)[0] ?? "";
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
}

function serverLine(s: ToolServerView): string {
  const state = !s.enabled && s.status === "stopped" ? "disabled" : s.status;
  const what = s.status === "running" ? `${s.tools.length} tool${s.tools.length === 1 ? "" : "s"}` : (s.error ?? "");
  return `${s.name}  ${state}${what ? `  ${what}` : ""}${s.summary ? `\n  ${s.summary}` : ""}`;
}

export function formatList(v: ToolsReply): string {
  const lines = [`config: ${v.configPath}`];
  if (v.configError) lines.push(`config error: ${v.configError}`);
  if (v.servers.length === 0) lines.push(v.configError ? "no MCP server can run until the file is fixed" : "no MCP servers configured");
  for (const s of v.servers) {
    lines.push("", serverLine(s));
    const width = Math.max(0, ...s.tools.map((t) => t.name.length));
    for (const t of s.tools) lines.push(`    ${t.name.padEnd(width)}  ${oneLine(t.description)}${t.enabled ? "" : " (disabled)"}`);
  }
  return lines.join("\n");
}
