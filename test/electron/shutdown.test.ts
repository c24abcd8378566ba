// The core's graceful stop, on a real core: stop admitting, drain, cut what never finishes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startCore } from "../../electron/core/core.js";
import { shutdownCore } from "../../electron/core/shutdown.js";
import { tempDir } from "../helpers/cli.js";
import { inFlightRequest } from "./inFlightRequest.js";

describe("shutdownCore", () => {
  it("with nothing in flight, closes cleanly within the drain time", async () => {
    const core = await startCore({ dataDir: tempDir(), port: 0 });
    assert.equal((await fetch(`${core.url}/healthz`)).status, 200);
    assert.equal(await shutdownCore(core, { drainMs: 60_000 }), true);
    await assert.rejects(fetch(`${core.url}/healthz`));
  });

  it("stops admitting at once, and cuts a request that never finishes when the drain time runs out", async () => {
    const core = await startCore({ dataDir: tempDir(), port: 0 });
    const { closed } = await inFlightRequest(core.url);
    const done = shutdownCore(core, { drainMs: 300 });
    // The listener is closed before the drain ends: new connections are refused.
    await assert.rejects(fetch(`${core.url}/healthz`));
    assert.equal(await done, false);
    await closed;
  });

  it("a request that completes during the drain gets an answer (503: no longer admitting), then the close finishes", async () => {
    const core = await startCore({ dataDir: tempDir(), port: 0 });
    const { sock, closed, received } = await inFlightRequest(core.url);
    const done = shutdownCore(core, { drainMs: 60_000 });
    await assert.rejects(fetch(`${core.url}/healthz`)); // the listener is closed by now
    sock.write("1\r\n\r\n");
    await closed;
    // First the answer from before the shutdown, then the refusal.
    assert.match(received(), /^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 503 /);
    assert.equal(await done, true);
  });
});
