import fs from "node:fs";
import path from "node:path";
import { repoRoot } from "../helpers/cli.js";

/** The reference MCP servers from npm (devDependencies), run with this Node: no network, no npx. */
const pkg = (name: string) => path.join(repoRoot, "node_modules", "@modelcontextprotocol", name, "dist", "index.js");

export const filesystemServer = (dir: string) => ({ command: process.execPath, args: [pkg("server-filesystem"), dir] });
export const memoryServer = (file: string, extraEnv: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [pkg("server-memory")],
  env: { MEMORY_FILE_PATH: file, ...extraEnv },
});
export const everythingServer = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [pkg("server-everything"), "stdio"], ...extra });

export function writeMcpJson(dataDir: string, config: unknown): string {
  const file = path.join(dataDir, "mcp.json");
  fs.writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config, null, 2));
  return file;
}

/** Whether a process id is alive (signal 0 checks without touching it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
