// The core's port between runs (electron/main/corePort.ts): remembered, asked for again, and
// given up for any free port when another program holds it; driven against the real core entry.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, describe, it } from "node:test";
import { CoreSupervisor } from "../../electron/main/coreProcess.js";
import { APP_DEFAULT_PORT, corePortFor, loadCorePort, saveCorePort, startWithPortFallback } from "../../electron/main/corePort.js";
import { repoRoot, tempDir } from "../helpers/cli.js";

const realEntry = path.join(repoRoot, "electron", "core", "entry.ts");

describe("the core's port between runs", () => {
  const supervisors: CoreSupervisor[] = [];
  const servers: net.Server[] = [];
  after(() => {
    for (const s of supervisors) s.kill();
    for (const s of servers) s.close();
  });

  it("asks for the remembered port, else the default; the running core's after a crash; any free port after a failed start", () => {
    assert.equal(corePortFor(null, 0, null), APP_DEFAULT_PORT);
    assert.equal(corePortFor(null, 0, 41234), 41234);
    assert.equal(corePortFor("http://127.0.0.1:40001", 0, 41234), 40001);
    assert.equal(corePortFor("http://127.0.0.1:40001", 1, 41234), 0);
    assert.equal(corePortFor(null, 2, null), 0);
  });

  it("keeps the port in a small file; a missing, malformed or foreign file means none", () => {
    const file = path.join(tempDir(), "core-port.json");
    assert.equal(loadCorePort(file), null);
    saveCorePort(file, 40002);
    assert.equal(loadCorePort(file), 40002);
    fs.writeFileSync(file, "{not json");
    assert.equal(loadCorePort(file), null);
    fs.writeFileSync(file, JSON.stringify({ port: 70000 }));
    assert.equal(loadCorePort(file), null);
    assert.throws(() => saveCorePort(file, 0));
  });

  it("when another program holds the remembered port, the core starts on a free one, which is remembered next", async () => {
    const holder = net.createServer();
    servers.push(holder);
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", r));
    const taken = (holder.address() as net.AddressInfo).port;
    const file = path.join(tempDir(), "core-port.json");
    saveCorePort(file, taken);
    const remembered = loadCorePort(file);
    const asked: number[] = [];
    const s = new CoreSupervisor({
      entry: realEntry,
      execArgv: ["--import", "tsx"],
      env: { ...process.env, CLAWRL_HOME: tempDir() },
      backoff: { initialMs: 50, maxMs: 1000, factor: 2 },
      launch: (prev, failed) => {
        const port = corePortFor(prev?.url ?? null, failed, remembered);
        asked.push(port);
        return { env: { CLAWRL_CORE_PORT: String(port) } };
      },
    });
    supervisors.push(s);
    s.on("ready", (ep) => saveCorePort(file, Number(new URL(ep.url).port)));
    const ep = await startWithPortFallback(s);
    const port = Number(new URL(ep.url).port);
    assert.deepEqual(asked, [taken, 0]);
    assert.notEqual(port, taken);
    assert.equal(loadCorePort(file), port);
    assert.equal((await s.stop()).code, 0);
  });
});
