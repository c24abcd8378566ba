import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { after, describe, it } from "node:test";
import { ToolHost } from "../../electron/core/tools/host.js";
import type { ToolsEvent } from "../../electron/core/api/events.js";
import { tempDir } from "../helpers/cli.js";
import { alive, everythingServer, until, writeMcpJson } from "./servers.js";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

describe("the MCP host's server life", () => {
  const hosts: ToolHost[] = [];
  const children: ChildProcess[] = [];
  after(async () => {
    await Promise.all(hosts.map((h) => h.close()));
    for (const c of children) c.kill("SIGKILL");
  });
  const hostFor = (config: unknown, timings = {}) => {
    const dataDir = tempDir();
    writeMcpJson(dataDir, config);
    const events: ToolsEvent[] = [];
    const logs: string[] = [];
    const host = new ToolHost({ dataDir, emit: (e) => events.push(e), timings, log: (l) => logs.push(l) });
    hosts.push(host);
    return { host, events, logs };
  };
  const server = (host: ToolHost, name: string) => host.view().servers.find((s) => s.name === name)!;

  it("a server that crashes while idle is restarted by itself after its back-off", async () => {
    const { host } = hostFor({ mcpServers: { ev: everythingServer() } }, { backoffMs: 300 });
    await host.startAll();
    const first = server(host, "ev").pid!;
    process.kill(first, "SIGKILL");
    await until(() => server(host, "ev").status === "failed", 5000, "the crash to show");
    assert.match(server(host, "ev").error!, /the server exited/);
    await until(() => server(host, "ev").status === "running", 10_000, "the restart");
    const s = server(host, "ev");
    assert.equal(s.restarts, 1);
    assert.notEqual(s.pid, first);
    assert.ok(s.tools.some((t) => t.name === "echo"));
    const r = await host.call({ name: "ev__echo", arguments: { message: "again" }, approval: "once" });
    assert.equal(r.content, "Echo: again");
  });

  it("a call whose request is aborted (the answer was stopped) is cancelled at once", async () => {
    const { host } = hostFor({ mcpServers: { ev: everythingServer() } });
    await host.startAll();
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 300);
    const t0 = Date.now();
    const r = await host.call({ name: "ev__trigger-long-running-operation", arguments: { duration: 5, steps: 5 }, approval: "once" }, abort.signal);
    assert.ok(Date.now() - t0 < 4000, `took ${Date.now() - t0} ms (the operation runs 5 s when not cancelled)`);
    assert.deepEqual([r.isError, r.content], [true, "The call was cancelled: the answer was stopped."]);
    assert.equal((await host.call({ name: "ev__echo", arguments: { message: "next" }, approval: "once" })).content, "Echo: next");
  });

  it("a server that exits at every start is retried with back-off, then left until needed", async () => {
    const { host, logs } = hostFor(
      { mcpServers: { dies: { command: process.execPath, args: ["-e", "console.error('no config'); process.exit(1)"] } } },
      { backoffMs: 50, maxAutoRestarts: 2 },
    );
    await host.startAll();
    await until(() => server(host, "dies").restarts === 2 && server(host, "dies").status === "failed", 10_000, "two automatic restarts");
    await new Promise((r) => setTimeout(r, 600));
    const s = server(host, "dies");
    assert.equal(s.restarts, 2, "no more automatic restarts");
    assert.equal(s.status, "failed");
    assert.match(s.error!, /exited while starting \(stderr: no config\)/);
    assert.ok(logs.some((l) => l.startsWith("mcp server 'dies': the server exited")));
    // A call is a need: it tries again at once and its result says why it cannot run.
    const r = await host.call({ name: "dies__anything", arguments: {}, approval: "once" });
    assert.equal(r.isError, true);
    assert.match(r.content, /not running .*no config/);
  });

  it("refreshes a tool list on notifications/tools/list_changed", async () => {
    // server-everything adds its client-dependent tools after initialize and says so with list_changed.
    const { host, events } = hostFor({ mcpServers: { ev: everythingServer() } });
    await host.startAll();
    await until(() => events.filter((e) => e.server === "ev" && e.change === "tools").length >= 2, 5000, "a list_changed refresh");
    assert.ok(
      server(host, "ev").tools.some((t) => t.name === "simulate-research-query"),
      server(host, "ev")
        .tools.map((t) => t.name)
        .join(","),
    );
  });

  it("talks Streamable HTTP with the configured headers; header values never show", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [everythingServer().args[0], "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    await until(() => /listening on port/.test(err), 15_000, "the HTTP server");
    const secret = "sk-http-secret-123456";
    const { host } = hostFor({ mcpServers: { web: { url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: `Bearer ${secret}` } } } });
    await host.startAll();
    const s = server(host, "web");
    assert.equal(s.status, "running", s.error ?? "");
    assert.equal(s.transport, "http");
    assert.equal(s.pid, null);
    assert.equal(s.summary, `http://127.0.0.1:${port}/mcp (Authorization: ****)`);
    assert.ok(!JSON.stringify(host.view()).includes(secret));
    const r = await host.call({ name: "web__echo", arguments: { message: "over http" }, approval: "once" });
    assert.deepEqual([r.isError, r.content], [false, "Echo: over http"]);
    await host.close();
    assert.equal(server(host, "web").status, "stopped");
  });

  it("close() waits for every stdio server's process to exit", async () => {
    const { host } = hostFor({ mcpServers: { a: everythingServer(), b: everythingServer() } });
    await host.startAll();
    const pids = host.pids();
    assert.equal(pids.length, 2);
    await host.close();
    for (const p of pids) assert.equal(alive(p), false);
  });
});
