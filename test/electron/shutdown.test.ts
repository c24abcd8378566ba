// The core's graceful stop, on a real core: stop admitting, drain, cut what never finishes.
import assert from "node:assert/strict";
import { once } from "node:events";
import net from "node:net";
import { describe, it } from "node:test";
import { startCore } from "../../electron/core/core.js";
import { shutdownCore } from "../../electron/core/shutdown.js";
import { tempDir } from "../helpers/cli.js";

async function halfRequest(url: string): Promise<{ sock: net.Socket; closed: Promise<void> }> {
  const u = new URL(url);
  const sock = net.connect(Number(u.port), u.hostname);
  await once(sock, "connect");
  sock.on("error", () => {});
  const closed = new Promise<void>((resolve) => sock.on("close", () => resolve()));
  // Headers never finished: the server has a request in progress that will not complete.
  sock.write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  return { sock, closed };
}

describe("shutdownCore", () => {
  it("with nothing in flight, closes cleanly within the drain time", async () => {
    const core = await startCore({ dataDir: tempDir(), port: 0 });
    assert.equal((await fetch(`${core.url}/healthz`)).status, 200);
    assert.equal(await shutdownCore(core, { drainMs: 60_000 }), true);
    await assert.rejects(fetch(`${core.url}/healthz`));
  });

  it("stops admitting at once, and cuts a request that never finishes when the drain time runs out", async () => {
    const core = await startCore({ dataDir: tempDir(), port: 0 });
    const { closed } = await halfRequest(core.url);
    const done = shutdownCore(core, { drainMs: 300 });
    // The listener is closed before the drain ends: new connections are refused.
    await assert.rejects(fetch(`${core.url}/healthz`));
    assert.equal(await done, false);
    await closed;
  });

  it("a request that completes during the drain gets an answer (503: no longer admitting), then the close finishes", async () => {
    const core = await startCore({ dataDir: tempDir(), port: 0 });
    const { sock, closed } = await halfRequest(core.url);
    let reply = "";
    sock.setEncoding("utf8").on("data", (d: string) => (reply += d));
    const done = shutdownCore(core, { drainMs: 60_000 });
    await assert.rejects(fetch(`${core.url}/healthz`)); // the listener is closed by now
    sock.write("1\r\n\r\n");
    await closed;
    assert.match(reply, /^HTTP\/1\.1 503 /);
    assert.equal(await done, true);
  });
});
