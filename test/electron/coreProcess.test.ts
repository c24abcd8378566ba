// The core-process supervisor, driven against real child processes: the real core entry
// (electron/core/entry.ts through tsx, on a temp data dir) and small misbehaving scripts.
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { after, describe, it } from "node:test";
import { backoffDelay, CoreSupervisor, type CoreEndpoint } from "../../electron/main/coreProcess.js";
import { repoRoot, tempDir } from "../helpers/cli.js";
import { inFlightRequest } from "./inFlightRequest.js";

const realEntry = path.join(repoRoot, "electron", "core", "entry.ts");
const fixture = (name: string) => path.join(import.meta.dirname, "fixtures", name);
const tsx = ["--import", "tsx"];

const supervisors: CoreSupervisor[] = [];
function supervise(opts: ConstructorParameters<typeof CoreSupervisor>[0]): CoreSupervisor {
  const s = new CoreSupervisor(opts);
  supervisors.push(s);
  return s;
}
after(() => {
  for (const s of supervisors) s.kill();
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function get(ep: CoreEndpoint, route: string, token?: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${ep.url}${route}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: await res.json() };
}

describe("backoffDelay", () => {
  it("doubles from the initial delay and stops at the maximum", () => {
    const o = { initialMs: 100, maxMs: 1000, factor: 2 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((a) => backoffDelay(a, o)),
      [100, 200, 400, 800, 1000, 1000],
    );
  });
  it("rejects attempt numbers below 1", () => {
    assert.throws(() => backoffDelay(0), /attempt must be a positive integer/);
  });
});

describe("CoreSupervisor with the real core entry", () => {
  it("starts the core, hands back {url, token}, and the core answers with that token", async () => {
    const dataDir = tempDir();
    const s = supervise({ entry: realEntry, execArgv: tsx, env: { ...process.env, CLAWRL_HOME: dataDir } });
    const ep = await s.start();
    assert.match(ep.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(ep.dataDir, dataDir);
    assert.equal(ep.token, fs.readFileSync(path.join(dataDir, "token"), "utf8").trim());
    assert.deepEqual((await get(ep, "/healthz")).body, { ok: true });
    assert.equal((await get(ep, "/api/status")).status, 401);
    assert.notEqual((await get(ep, "/api/status", ep.token)).status, 401);
    const r = await s.stop();
    assert.equal(r.graceful, true);
    assert.equal(r.code, 0);
  });

  it("restarts the core after a crash, on the same port, with the same token", async () => {
    const dataDir = tempDir();
    const s = supervise({
      entry: realEntry,
      execArgv: tsx,
      env: { ...process.env, CLAWRL_HOME: dataDir },
      backoff: { initialMs: 50, maxMs: 1000, factor: 2 },
      launch: (prev) => ({ env: prev ? { CLAWRL_CORE_PORT: new URL(prev.url).port } : {} }),
    });
    const first = await s.start();
    const exits: { expected: boolean; signal: string | null }[] = [];
    const restarts: number[] = [];
    s.on("exit", (e) => exits.push({ expected: e.expected, signal: e.signal }));
    s.on("restarting", (r) => restarts.push(r.attempt));
    const readyAgain = once(s, "ready") as Promise<[CoreEndpoint]>;
    process.kill(first.pid, "SIGKILL"); // a crash, as far as the supervisor can tell
    const [second] = await readyAgain;
    assert.deepEqual(exits, [{ expected: false, signal: "SIGKILL" }]);
    assert.deepEqual(restarts, [1]);
    assert.notEqual(second.pid, first.pid);
    assert.equal(second.url, first.url);
    assert.equal(second.token, first.token);
    assert.equal(s.endpoint?.pid, second.pid);
    assert.deepEqual((await get(second, "/healthz")).body, { ok: true });
    assert.equal((await s.stop()).code, 0);
    assert.equal(isAlive(second.pid), false);
  });

  it("stops gracefully even with a request in flight that never completes (drain deadline)", async () => {
    const s = supervise({
      entry: realEntry,
      execArgv: tsx,
      env: { ...process.env, CLAWRL_HOME: tempDir(), CLAWRL_CORE_DRAIN_MS: "300" },
      stopTimeoutMs: 60_000,
    });
    let stderr = "";
    s.on("output", ({ stream, text }) => stream === "stderr" && (stderr += text));
    const ep = await s.start();
    const { closed } = await inFlightRequest(ep.url);
    const r = await s.stop();
    assert.equal(r.graceful, true, "the core exited by itself, no SIGKILL");
    assert.equal(r.code, 0);
    assert.match(stderr, /drain time ran out; open connections were closed/);
    await closed;
    assert.equal(isAlive(ep.pid), false);
    // Nothing listens there any more.
    await assert.rejects(fetch(`${ep.url}/healthz`));
  });

  it("the core exits when its parent's IPC channel goes away", async () => {
    const s = supervise({ entry: realEntry, execArgv: tsx, env: { ...process.env, CLAWRL_HOME: tempDir() } });
    const ep = await s.start();
    const exited = once(s, "exit") as Promise<[{ code: number | null }]>;
    // Reach the child the way a dying parent would leave it: channel closed, no message.
    (s as unknown as { child: { disconnect(): void } }).child.disconnect();
    const [e] = await exited;
    assert.equal(e.code, 0);
    assert.equal(isAlive(ep.pid), false);
  });

  it("start() reports a core that cannot start with its own reason (bad config)", async () => {
    const s = supervise({ entry: realEntry, execArgv: tsx, env: { ...process.env, CLAWRL_HOME: tempDir(), CLAWRL_CORE_PORT: "99999" } });
    await assert.rejects(s.start(), /core exited before it was ready \(exit code 1\): port must be an integer from 0 to 65535/);
    assert.equal(s.endpoint, null);
  });
});

describe("CoreSupervisor with misbehaving processes", () => {
  it("start() reports a binary that cannot be run, and can be called again", async () => {
    const s = supervise({ entry: fixture("silent-core.mjs"), execPath: "/nonexistent/node" });
    await assert.rejects(s.start(), /core process could not start: spawn \/nonexistent\/node ENOENT/);
    await assert.rejects(s.start(), /could not start/);
  });

  it("start() rejects with the exit code and the last stderr line of a core that dies before ready", async () => {
    const s = supervise({ entry: fixture("crash-on-start.mjs") });
    await assert.rejects(s.start(), /exit code 3\): boom: the model file is corrupt/);
    // And the supervisor can be started again afterwards.
    await assert.rejects(s.start(), /exit code 3\)/);
  });

  it("start() rejects and kills a core that never reports ready", async () => {
    const s = supervise({ entry: fixture("silent-core.mjs"), readyTimeoutMs: 1500 });
    const restarts: unknown[] = [];
    s.on("restarting", (r) => restarts.push(r));
    const exited = once(s, "exit") as Promise<[{ signal: string | null }]>;
    await assert.rejects(s.start(), /did not report ready within 1500 ms/);
    assert.equal((await exited)[0].signal, "SIGKILL");
    assert.deepEqual(restarts, [], "a first start that fails is the caller's to handle, not restarted");
    assert.equal(s.pid, null);
  });

  it("stop() kills a core that ignores the shutdown request once the timeout runs out", async () => {
    const s = supervise({ entry: fixture("stubborn-core.mjs") });
    const ep = await s.start();
    const r = await s.stop(500);
    assert.equal(r.graceful, false);
    assert.equal(r.signal, "SIGKILL");
    assert.equal(isAlive(ep.pid), false);
  });

  it("a second stop() while stopping returns the same result; kill() forces it", async () => {
    const s = supervise({ entry: fixture("stubborn-core.mjs") });
    const ep = await s.start();
    const a = s.stop(60_000);
    const b = s.stop(60_000);
    assert.equal(a, b);
    s.kill(); // the second quit
    const r = await a;
    assert.equal(r.signal, "SIGKILL");
    assert.equal(isAlive(ep.pid), false);
  });

  it("backs off between failed restarts and gives up after maxFailedStarts", async () => {
    const marker = path.join(tempDir(), "marker");
    const s = supervise({
      entry: fixture("flaky-core.mjs"),
      env: { ...process.env, CLAWRL_FLAKY_MARKER: marker },
      backoff: { initialMs: 20, maxMs: 1000, factor: 3 },
      maxFailedStarts: 3,
    });
    const first = await s.start();
    const restarts: { attempt: number; delayMs: number }[] = [];
    s.on("restarting", (r) => restarts.push(r));
    const failed = once(s, "failed") as Promise<[Error]>;
    process.kill(first.pid, "SIGKILL");
    const [err] = await failed;
    assert.match(err.message, /failed to start 3 times in a row; giving up: flaky core: failing on purpose/);
    // The crash, then three relaunches that die before ready: three restarts, growing delays.
    assert.deepEqual(restarts, [
      { attempt: 1, delayMs: 20 },
      { attempt: 2, delayMs: 60 },
      { attempt: 3, delayMs: 180 },
    ]);
    assert.equal(s.endpoint, null);
    assert.equal(s.pid, null);
  });
});
