import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { runCliAsync, tempDir } from "../helpers/cli.js";
import { alive, filesystemServer, writeMcpJson } from "./servers.js";

describe("clawrl mcp list", () => {
  const dataDir = tempDir();
  const folder = tempDir("clawrl-mcp-cli-folder-");
  fs.writeFileSync(path.join(folder, "a.txt"), "a");
  writeMcpJson(dataDir, {
    mcpServers: {
      files: filesystemServer(folder),
      ghost: { command: "clawrl-no-such-command-xyz", args: ["--x"] },
      off: { command: "whatever", disabled: true },
    },
  });

  it("--json: the filesystem server running with its tools, a missing command failed with the reason, exit 0, no process left", async () => {
    const t0 = Date.now();
    const r = await runCliAsync(["mcp", "list", "--data-dir", dataDir, "--json"], {}, 60_000);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - t0 < 60_000);
    const out = JSON.parse(r.stdout);
    assert.equal(out.configError, null);
    const by = Object.fromEntries(out.servers.map((s: { name: string }) => [s.name, s]));
    assert.equal(by.files.status, "running");
    const names = by.files.tools.map((t: { name: string }) => t.name);
    assert.ok(names.includes("read_text_file") && names.includes("list_directory"), names.join(","));
    assert.equal(by.ghost.status, "failed");
    assert.match(by.ghost.error, /command not found: clawrl-no-such-command-xyz/);
    assert.equal(by.off.enabled, false);
    assert.equal(by.off.status, "stopped");
    assert.equal(alive(by.files.pid), false, "the server stopped with the command");
  });

  it("text: one line per server with its status or why it failed, tools with a one-line description", async () => {
    const r = await runCliAsync(["mcp", "list", "--data-dir", dataDir], {}, 60_000);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^files {2}running {2}\d+ tools$/m);
    assert.match(r.stdout, /^ {4}list_directory +\S.*$/m);
    assert.match(r.stdout, /^ghost {2}failed {2}command not found: clawrl-no-such-command-xyz$/m);
    assert.match(r.stdout, /^off {2}disabled$/m);
    assert.equal(r.stderr, "");
  });

  it("a broken mcp.json is reported, not a crash; --help describes the command", async () => {
    const dir = tempDir();
    writeMcpJson(dir, "{oops");
    const r = await runCliAsync(["mcp", "list", "--data-dir", dir], {}, 30_000);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /config error: .*not valid JSON/);
    const h = await runCliAsync(["mcp", "--help"], {}, 30_000);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /Usage: clawrl mcp list \[--data-dir DIR\] \[--json\]/);
  });
});
