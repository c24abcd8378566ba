import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import type { ToolsEvent } from "../../electron/core/api/events.js";
import { callApi } from "../helpers/api.js";
import { tempDir } from "../helpers/cli.js";
import { alive, everythingServer, filesystemServer, memoryServer, until, writeMcpJson } from "./servers.js";

const SECRET = "sk-memory-secret-4242";
const STDERR_SECRET = "sk-stderr-secret-777";

describe("/api/tools with real MCP servers (filesystem, memory, everything)", () => {
  let core: RunningCore;
  let dataDir: string;
  let folder: string;
  let memoryFile: string;
  const events: ToolsEvent[] = [];
  const pids = new Set<number>();

  before(async () => {
    dataDir = tempDir();
    folder = tempDir("clawrl-mcp-folder-");
    fs.writeFileSync(path.join(folder, "notes.txt"), "buy milk\n");
    fs.writeFileSync(path.join(folder, "todo.md"), "- ship tools\n");
    memoryFile = path.join(tempDir("clawrl-mcp-memory-"), "memory.jsonl");
    // Claude Desktop's shape, as a user pastes it, plus a key of another app that must survive rewrites.
    writeMcpJson(dataDir, {
      mcpServers: {
        files: filesystemServer(folder),
        memory: memoryServer(memoryFile, { API_TOKEN: SECRET }),
        everything: everythingServer({ timeoutMs: 1500 }),
        crashy: {
          command: process.execPath,
          args: ["-e", `console.error("starting with token " + process.env.TOKEN); process.exit(3)`],
          env: { TOKEN: STDERR_SECRET },
        },
        missing: { command: "clawrl-no-such-command-xyz" },
      },
      globalShortcut: "Ctrl+Space",
    });
    core = await startCore({ dataDir, port: 0 });
    core.bus.on("tools", (e) => events.push(e));
  });
  after(async () => {
    await core?.close();
  });

  it("starts no server before one is needed", () => {
    assert.deepEqual(core.tools.pids(), []);
    assert.ok(core.tools.view().servers.every((s) => s.status === "stopped" || s.status === "failed"));
  });

  it("GET /api/tools starts the servers and lists their tools; failures say why; secrets never show", async () => {
    const r = await callApi(core, "GET", "/api/tools");
    assert.equal(r.status, 200);
    assert.equal(r.body.configError, null);
    assert.equal(r.body.configPath, path.join(dataDir, "mcp.json"));
    const by = Object.fromEntries(r.body.servers.map((s: { name: string }) => [s.name, s]));
    assert.equal(by.files.status, "running");
    const fileTools = by.files.tools.map((t: { name: string }) => t.name);
    for (const t of ["read_text_file", "list_directory", "write_file"]) assert.ok(fileTools.includes(t), `files has ${t}`);
    const list = by.files.tools.find((t: { name: string }) => t.name === "list_directory");
    assert.equal(list.qualifiedName, "files__list_directory");
    assert.equal(list.permission, "ask");
    assert.equal(list.enabled, true);
    assert.equal(list.inputSchema.type, "object");
    assert.equal(by.memory.status, "running");
    assert.match(by.memory.summary, /^MEMORY_FILE_PATH=\*\*\*\* API_TOKEN=\*\*\*\* \S+node \S+server-memory/);
    assert.equal(by.everything.status, "running");
    assert.equal(by.missing.status, "failed");
    assert.match(by.missing.error, /command not found: clawrl-no-such-command-xyz/);
    // It exits at once and restarts on its own back-off (1 s, 2 s, ...): between a restart and its exit it shows "starting".
    assert.ok(["failed", "starting"].includes(by.crashy.status), by.crashy.status);
    assert.ok(
      by.crashy.stderrTail.some((l: string) => l === "starting with token ****"),
      JSON.stringify(by.crashy.stderrTail),
    );
    const text = JSON.stringify(r.body);
    assert.ok(!text.includes(SECRET) && !text.includes(STDERR_SECRET) && !text.includes(memoryFile), "no env value in the reply");
    for (const s of r.body.servers) if (s.status === "running") pids.add(s.pid);
    assert.equal(pids.size, 3);
    assert.ok(events.some((e) => e.server === "files" && e.change === "status"));
    assert.ok(events.some((e) => e.server === "files" && e.change === "tools"));
  });

  it("GET /api/tools/openai: the enabled tools as OpenAI functions named server__tool", async () => {
    const r = await callApi(core, "GET", "/api/tools/openai");
    assert.equal(r.status, 200);
    const names = r.body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.ok(names.includes("files__list_directory"));
    assert.ok(names.includes("memory__create_entities"));
    assert.ok(names.includes("everything__echo"));
    const t = r.body.tools.find((x: { function: { name: string } }) => x.function.name === "files__read_text_file");
    assert.equal(t.type, "function");
    assert.equal(t.function.parameters.type, "object");
    assert.ok(t.function.description.length > 0);
  });

  it("a call without approval is refused (403) and never reaches the server", async () => {
    const target = path.join(folder, "written.txt");
    const w = await callApi(core, "POST", "/api/tools/call", { name: "files__write_file", arguments: JSON.stringify({ path: target, content: "x" }) });
    assert.equal(w.status, 403);
    assert.equal(w.body.error.code, "approval_required");
    const m = await callApi(core, "POST", "/api/tools/call", {
      name: "memory__create_entities",
      arguments: { entities: [{ name: "Ada", entityType: "person", observations: ["likes tea"] }] },
    });
    assert.equal(m.status, 403);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(fs.existsSync(target), false, "the filesystem server wrote nothing");
    const g = await callApi(core, "POST", "/api/tools/call", { name: "memory__read_graph", arguments: {}, approval: "once" });
    assert.equal(g.status, 200);
    assert.doesNotMatch(g.body.content, /Ada/, "the memory server never saw the refused call");
  });

  it("a call with approval runs and returns the server's result", async () => {
    const r = await callApi(core, "POST", "/api/tools/call", {
      name: "files__list_directory",
      arguments: JSON.stringify({ path: folder }),
      approval: "once",
      callId: "call_1",
      sessionId: "s1",
      turnId: "t1",
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.isError, false);
    assert.equal(r.body.truncated, false);
    assert.match(r.body.content, /notes\.txt/);
    assert.match(r.body.content, /todo\.md/);
    assert.equal(typeof r.body.ms, "number");
    const w = await callApi(core, "POST", "/api/tools/call", {
      name: "memory__create_entities",
      arguments: { entities: [{ name: "Grace", entityType: "person", observations: ["writes compilers"] }] },
      approval: "once",
    });
    assert.equal(w.body.isError, false);
    assert.match(fs.readFileSync(memoryFile, "utf8"), /Grace/);
    // Each call is recorded with who allowed it (not its content).
    const log = fs
      .readFileSync(path.join(dataDir, "logs", "tools.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const line = log.find((l) => l.callId === "call_1");
    assert.deepEqual([line.name, line.sessionId, line.turnId, line.allowedBy, line.isError], ["files__list_directory", "s1", "t1", "once", false]);
  });

  it("'always' is remembered in mcp.json and revoked with permission 'ask'", async () => {
    const first = await callApi(core, "POST", "/api/tools/call", {
      name: "files__read_text_file",
      arguments: { path: path.join(folder, "notes.txt") },
      approval: "always",
    });
    assert.equal(first.status, 200);
    assert.match(first.body.content, /buy milk/);
    const raw = JSON.parse(fs.readFileSync(path.join(dataDir, "mcp.json"), "utf8"));
    assert.deepEqual(raw.mcpServers.files.alwaysAllow, ["read_text_file"]);
    assert.equal(raw.globalShortcut, "Ctrl+Space", "keys of other apps survive");
    const again = await callApi(core, "POST", "/api/tools/call", { name: "files__read_text_file", arguments: { path: path.join(folder, "todo.md") } });
    assert.equal(again.status, 200);
    assert.match(again.body.content, /ship tools/);
    const view = await callApi(core, "GET", "/api/tools");
    const files = view.body.servers.find((s: { name: string }) => s.name === "files");
    const tool = files.tools.find((t: { name: string }) => t.name === "read_text_file");
    assert.equal(tool.permission, "always");
    const revoke = await callApi(core, "PATCH", "/api/tools/servers/files/tools/read_text_file", { permission: "ask" });
    assert.equal(revoke.status, 200);
    assert.equal(JSON.parse(fs.readFileSync(path.join(dataDir, "mcp.json"), "utf8")).mcpServers.files.alwaysAllow, undefined);
    const refused = await callApi(core, "POST", "/api/tools/call", { name: "files__read_text_file", arguments: { path: path.join(folder, "todo.md") } });
    assert.equal(refused.status, 403);
    // Revoking does not restart the server. (Only `files` is compared: the crashing test server
    // restarts on its own back-off, so the set of all pids can change at any moment.)
    const filesAfter = core.tools.view().servers.find((s) => s.name === "files")!;
    assert.equal(filesAfter.status, "running");
    assert.equal(filesAfter.pid, files.pid);
    assert.equal(filesAfter.restarts, files.restarts);
  });

  it("unknown tools are 404s; server errors and bad arguments are results", async () => {
    const unknown = await callApi(core, "POST", "/api/tools/call", { name: "files__no_such_tool", arguments: {}, approval: "once" });
    assert.equal(unknown.status, 404);
    assert.equal((await callApi(core, "POST", "/api/tools/call", { name: "nosuch__x", arguments: {}, approval: "once" })).status, 404);
    assert.equal((await callApi(core, "POST", "/api/tools/call", { name: "plainname", arguments: {}, approval: "once" })).status, 404);
    const err = await callApi(core, "POST", "/api/tools/call", { name: "everything__get-sum", arguments: { a: "one" }, approval: "once" });
    assert.equal(err.status, 200);
    assert.equal(err.body.isError, true);
    assert.match(err.body.content, /expected number/);
    const bad = await callApi(core, "POST", "/api/tools/call", { name: "everything__echo", arguments: "{not json", approval: "once" });
    assert.equal(bad.status, 200);
    assert.equal(bad.body.isError, true);
    assert.match(bad.body.content, /not valid JSON/);
    const body = await callApi(core, "POST", "/api/tools/call", { name: "everything__echo", arguments: {}, approval: "sometimes" });
    assert.equal(body.status, 400);
    assert.equal((await callApi(core, "POST", "/api/tools/call", { name: "everything__echo", arguments: {}, extra: 1 })).status, 400);
  });

  it("a call past its timeout is cancelled; its result is the error", async () => {
    const t0 = Date.now();
    const r = await callApi(core, "POST", "/api/tools/call", {
      name: "everything__trigger-long-running-operation",
      arguments: { duration: 10, steps: 2 },
      approval: "once",
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.isError, true);
    assert.match(r.body.content, /timed out after 1\.5 s and was cancelled/);
    assert.ok(Date.now() - t0 < 9000, `took ${Date.now() - t0} ms (the operation runs 10 s when not cancelled)`);
    // The server is still usable.
    const echo = await callApi(core, "POST", "/api/tools/call", { name: "everything__echo", arguments: { message: "still here" }, approval: "once" });
    assert.equal(echo.body.content, "Echo: still here");
  });

  it("a huge result is cut to fit the context, saying where", async () => {
    const r = await callApi(core, "POST", "/api/tools/call", { name: "everything__echo", arguments: { message: "y".repeat(100_000) }, approval: "once" });
    assert.equal(r.status, 200);
    assert.equal(r.body.truncated, true);
    assert.ok(r.body.content.length < 16_500, `${r.body.content.length} characters`);
    assert.match(r.body.content, /\[result cut at character 16000 of 100006/);
  });

  it("a server that crashes mid-call: the call's result is the error, the server restarts, the next call works", async () => {
    const before = (await callApi(core, "GET", "/api/tools")).body.servers.find((s: { name: string }) => s.name === "memory");
    const pending = callApi(core, "POST", "/api/tools/call", {
      name: "everything__trigger-long-running-operation",
      arguments: { duration: 4, steps: 4 },
      approval: "once",
    });
    // Crash the everything server while its call runs (a second in: the call has reached it, even on a busy machine).
    const ev = core.tools.view().servers.find((s) => s.name === "everything")!;
    await new Promise((r) => setTimeout(r, 1000));
    process.kill(ev.pid!, "SIGKILL");
    const r = await pending;
    assert.equal(r.status, 200);
    assert.equal(r.body.isError, true);
    assert.match(r.body.content, /stopped during the call/);
    await until(
      () =>
        core.tools.view().servers.find((s) => s.name === "everything")!.status !== "running" ||
        core.tools.view().servers.find((s) => s.name === "everything")!.restarts > 0,
      5000,
      "the crash to show",
    );
    const next = await callApi(core, "POST", "/api/tools/call", { name: "everything__echo", arguments: { message: "back" }, approval: "once" });
    assert.equal(next.body.isError, false);
    assert.equal(next.body.content, "Echo: back");
    const after = core.tools.view().servers.find((s) => s.name === "everything")!;
    assert.equal(after.status, "running");
    assert.ok(after.restarts >= 1 || after.pid !== ev.pid);
    assert.notEqual(after.pid, ev.pid);
    assert.equal(alive(ev.pid!), false);
    pids.add(after.pid!);
    // The other servers went on untouched.
    assert.equal(core.tools.view().servers.find((s) => s.name === "memory")!.pid, before.pid);
  });

  it("servers and tools are enabled, disabled, added and removed through mcp.json", async () => {
    const off = await callApi(core, "PATCH", "/api/tools/servers/memory", { enabled: false });
    assert.equal(off.status, 200);
    const mem = off.body.servers.find((s: { name: string }) => s.name === "memory");
    assert.equal(mem.enabled, false);
    assert.equal(mem.status, "stopped");
    assert.equal(JSON.parse(fs.readFileSync(path.join(dataDir, "mcp.json"), "utf8")).mcpServers.memory.disabled, true);
    let names = (await callApi(core, "GET", "/api/tools/openai")).body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.ok(!names.some((n: string) => n.startsWith("memory__")));
    const refused = await callApi(core, "POST", "/api/tools/call", { name: "memory__read_graph", arguments: {}, approval: "once" });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, "tool_disabled");

    const toolOff = await callApi(core, "PATCH", "/api/tools/servers/files/tools/write_file", { enabled: false });
    assert.equal(toolOff.status, 200);
    names = (await callApi(core, "GET", "/api/tools/openai")).body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.ok(!names.includes("files__write_file"));
    assert.ok(names.includes("files__list_directory"));
    assert.equal(
      (
        await callApi(core, "POST", "/api/tools/call", {
          name: "files__write_file",
          arguments: { path: path.join(folder, "w.txt"), content: "x" },
          approval: "once",
        })
      ).status,
      403,
    );

    const added = await callApi(core, "POST", "/api/tools/servers", { name: "notes", config: filesystemServer(folder) });
    assert.equal(added.status, 201);
    assert.ok(added.body.servers.some((s: { name: string }) => s.name === "notes"));
    assert.equal((await callApi(core, "POST", "/api/tools/servers", { name: "notes", config: filesystemServer(folder) })).status, 409);
    assert.equal((await callApi(core, "POST", "/api/tools/servers", { name: "bad", config: { args: [] } })).status, 400);
    assert.equal((await callApi(core, "POST", "/api/tools/servers", { name: "a__b", config: { command: "x" } })).status, 400);
    const call = await callApi(core, "POST", "/api/tools/call", { name: "notes__list_directory", arguments: { path: folder }, approval: "once" });
    assert.match(call.body.content, /notes\.txt/);
    const notesPid = core.tools.view().servers.find((s) => s.name === "notes")!.pid!;
    assert.ok(alive(notesPid));

    const removed = await callApi(core, "DELETE", "/api/tools/servers/notes");
    assert.equal(removed.status, 200);
    assert.ok(!removed.body.servers.some((s: { name: string }) => s.name === "notes"));
    await until(() => !alive(notesPid), 6000, "the removed server's process to exit");
    assert.equal((await callApi(core, "DELETE", "/api/tools/servers/notes")).status, 404);
    assert.equal((await callApi(core, "PATCH", "/api/tools/servers/nosuch", { enabled: true })).status, 404);
    assert.ok(events.some((e) => e.change === "config"));
  });

  it("close() leaves no server process behind", async () => {
    for (const p of core.tools.pids()) pids.add(p);
    assert.ok(pids.size >= 3);
    // The running ones are alive (the crashing test server may be between a start and its exit).
    const running = core.tools.view().servers.filter((s) => s.status === "running");
    assert.ok(running.length >= 1 && running.every((s) => typeof s.pid === "number" && alive(s.pid)));
    await core.close();
    for (const p of pids) assert.equal(alive(p), false, `server process ${p} is gone`);
    core = undefined as unknown as RunningCore;
  });
});

describe("a broken mcp.json", () => {
  it("is a clear configError; the app starts and runs without tools; changes are refused until it is fixed", async () => {
    const dataDir = tempDir();
    writeMcpJson(dataDir, '{"mcpServers": {"a": {"command": "x",}}}');
    const core = await startCore({ dataDir, port: 0 });
    try {
      const r = await callApi(core, "GET", "/api/tools");
      assert.equal(r.status, 200);
      assert.match(r.body.configError, /mcp\.json is not valid JSON/);
      assert.deepEqual(r.body.servers, []);
      assert.deepEqual((await callApi(core, "GET", "/api/tools/openai")).body.tools, []);
      const add = await callApi(core, "POST", "/api/tools/servers", { name: "x", config: { command: "y" } });
      assert.equal(add.status, 409);
      assert.equal(add.body.error.code, "config_invalid");
      assert.equal(fs.readFileSync(path.join(dataDir, "mcp.json"), "utf8"), '{"mcpServers": {"a": {"command": "x",}}}');
      assert.equal((await callApi(core, "GET", "/api/status")).status, 200);
    } finally {
      await core.close();
    }
  });
});
