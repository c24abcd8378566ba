import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { startFakeHub } from "./hfServer.js";

const stories = storiesModelPath();

describe("/api/models", { skip: stories ? false : "stories260K.gguf is absent" }, () => {
  let core: RunningCore;
  let hub: Awaited<ReturnType<typeof startFakeHub>>;
  const events: Array<Record<string, unknown>> = [];
  const call = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);

  before(async () => {
    hub = await startFakeHub({ files: { "acme/tiny-GGUF/stories.gguf": { body: fs.readFileSync(stories!) } } });
    process.env.HF_ENDPOINT = hub.endpoint;
    core = await startCore({ dataDir: tempDir(), port: 0 });
    core.bus.on("download", (p) => events.push(p));
  });
  after(async () => {
    delete process.env.HF_ENDPOINT;
    await core.close();
    await hub.close();
  });

  it("lists the catalog with a recommendation and no active model", async () => {
    const r = await call("GET", "/api/models");
    assert.equal(r.status, 200);
    assert.equal(r.body.active, null);
    assert.ok(r.body.catalog.length >= 6);
    assert.equal(r.body.catalog.filter((m: { recommended: boolean }) => m.recommended).length, 1);
    assert.ok(r.body.catalog.every((m: { installed: boolean }) => m.installed === false));
  });

  it("pulls an hf: model in the background with progress events, then uses it", async () => {
    const id = "hf:acme/tiny-GGUF/stories.gguf";
    const r = await call("POST", "/api/models/pull", { id });
    assert.equal(r.status, 202);
    assert.equal(r.body.download.state, "downloading");
    for (let i = 0; i < 200; i++) {
      if (events.some((e) => (e.download as { state?: string })?.state === "done")) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    const done = events.find((e) => (e.download as { state?: string })?.state === "done")?.download as { bytes: number; total: number };
    assert.ok(done, `events: ${JSON.stringify(events)}`);
    assert.equal(done.bytes, fs.statSync(stories!).size);
    const list = await call("GET", "/api/models");
    assert.equal(list.body.installed.length, 1);
    assert.equal(list.body.installed[0].architecture, "llama");
    assert.equal(list.body.installed[0].quantization, "F32", "stories260K says general.file_type 0 (ALL_F32)");
    const use = await call("POST", "/api/models/use", { id });
    assert.equal(use.status, 200);
    assert.equal(use.body.restartRequired, true, "the core serves no model yet");
    assert.equal((await call("GET", "/api/models")).body.active.id, id);
  });

  it("imports a local GGUF and refuses a non-GGUF with a readable 400", async () => {
    const ok = await call("POST", "/api/models/import", { path: stories });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.model.trainable, true);
    const junk = `${tempDir()}/junk.gguf`;
    fs.writeFileSync(junk, "not a model at all");
    const bad = await call("POST", "/api/models/import", { path: junk });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /junk\.gguf/);
    assert.equal((await call("POST", "/api/models/pull", { id: "no-such" })).status, 400);
    assert.equal((await call("POST", "/api/models/pull", {})).status, 400);
    assert.equal((await call("POST", "/api/models/nothing/pause")).status, 404);
  });
});

describe("/api/models while a model is served", { skip: stories ? false : "stories260K.gguf is absent" }, () => {
  it("describes the served model: size, quantization, context (read from its GGUF even when not installed)", async () => {
    const core = await startCore({ model: stories!, dataDir: tempDir(), port: 0, training: false, engine: { maxContextSize: 256, sequences: 1 } });
    try {
      const r = await callApi(core, "GET", "/api/models");
      assert.equal(r.status, 200);
      assert.equal(r.body.active.path, stories);
      assert.equal(r.body.active.sizeBytes, fs.statSync(stories!).size);
      assert.equal(r.body.active.quantization, "F32");
      assert.equal(r.body.active.contextSize, 256);
    } finally {
      await core.close();
    }
  });
});
