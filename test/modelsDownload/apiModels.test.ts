import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { loadCatalog } from "../../models/catalog.js";
import { callApi } from "../helpers/api.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { startFakeHub } from "./hfServer.js";

const stories = storiesModelPath();

describe("/api/models", () => {
  let core: RunningCore;
  let hub: Awaited<ReturnType<typeof startFakeHub>>;
  const events: Array<Record<string, unknown>> = [];
  const call = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);

  before(async () => {
    hub = await startFakeHub({ files: { "acme/tiny-GGUF/stories.gguf": { body: fs.readFileSync(stories) } } });
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
    assert.equal(done.bytes, fs.statSync(stories).size);
    const list = await call("GET", "/api/models");
    assert.equal(list.body.installed.length, 1);
    assert.equal(list.body.installed[0].architecture, "llama");
    assert.equal(list.body.installed[0].quantization, "F32", "stories260K says general.file_type 0 (ALL_F32)");
    const use = await call("POST", "/api/models/use", { id });
    assert.equal(use.status, 200);
    assert.equal(use.body.restartRequired, false, "a core without a model loads it at once");
    assert.equal((await call("GET", "/api/status")).body.model.path, use.body.active.path);
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

describe("/api/models while a model is served", () => {
  it("describes the served model: size, quantization, context (read from its GGUF even when not installed)", async () => {
    const core = await startCore({ model: stories, dataDir: tempDir(), port: 0, training: false, engine: { maxContextSize: 256, sequences: 1 } });
    try {
      const r = await callApi(core, "GET", "/api/models");
      assert.equal(r.status, 200);
      assert.equal(r.body.active.path, stories);
      assert.equal(r.body.active.sizeBytes, fs.statSync(stories).size);
      assert.equal(r.body.active.quantization, "F32");
      assert.equal(r.body.active.contextSize, 256);
    } finally {
      await core.close();
    }
  });
});

interface Verdict {
  fits: boolean;
  backend: string;
  maxContext: number;
  summary: string;
  limit: "memory" | "architecture" | null;
  weights: "resident" | "streamed" | null;
  needHostBytes: number | null;
  availableHostBytes: number | null;
}

describe("/api/models training verdicts", () => {
  let core: RunningCore;
  const saved = process.env.CLAWRL_TRAINER_RAM_LIMIT;
  const models = async () =>
    (await callApi(core, "GET", "/api/models")).body as {
      active: { training: Verdict };
      installed: Array<{ id: string; training: Verdict | null }>;
      catalog: Array<{ id: string; training: Verdict | null }>;
    };

  before(async () => {
    delete process.env.CLAWRL_TRAINER_RAM_LIMIT;
    // Served with the learning loop off: the verdicts come from the GGUF header and the plan, on wasm.
    core = await startCore({ model: stories, dataDir: tempDir(), port: 0, training: false, engine: { maxContextSize: 256, sequences: 1 } });
  });
  after(async () => {
    if (saved === undefined) delete process.env.CLAWRL_TRAINER_RAM_LIMIT;
    else process.env.CLAWRL_TRAINER_RAM_LIMIT = saved;
    await core.close();
  });

  it("says the tiny served model, an installed copy and the catalog's models train here on wasm, and how", async () => {
    await callApi(core, "POST", "/api/models/import", { path: stories });
    const body = await models();
    const served = body.active.training;
    assert.equal(served.fits, true, served.summary);
    assert.equal(served.backend, "wasm");
    assert.equal(served.limit, null);
    assert.equal(served.weights, "resident", "260K parameters stay on the backend");
    assert.ok(served.maxContext >= 256, `${served.maxContext}`);
    assert.match(served.summary, /all weights on the backend, context \d+ tokens/);
    assert.deepEqual(body.installed[0].training, served, "the installed copy of the served file has the same verdict");
    assert.equal(body.catalog.length, loadCatalog().length);
    for (const c of body.catalog) {
      assert.ok(c.training, `${c.id}: no verdict`);
      assert.equal(c.training.backend, "wasm");
      assert.equal(typeof c.training.fits, "boolean");
    }
    assert.equal(body.catalog.find((c) => c.id === "smollm2-135m-instruct")!.training!.fits, true);
  });

  it("says nothing trains under CLAWRL_TRAINER_RAM_LIMIT=100M, with needed vs available RAM", async () => {
    process.env.CLAWRL_TRAINER_RAM_LIMIT = "100M";
    try {
      const body = await models();
      const served = body.active.training;
      assert.equal(served.fits, false);
      assert.equal(served.limit, "memory");
      assert.equal(served.maxContext, 0);
      assert.ok(served.availableHostBytes! <= 100 * 2 ** 20, `${served.availableHostBytes}`);
      assert.ok(served.needHostBytes! > served.availableHostBytes!);
      assert.match(served.summary, /cannot train llama .* on wasm: .* of RAM, \d+ MiB available/);
      for (const c of body.catalog) assert.equal(c.training?.fits, false, c.id);
    } finally {
      delete process.env.CLAWRL_TRAINER_RAM_LIMIT;
    }
    assert.equal((await models()).active.training.fits, true, "the limit lifted: it trains again");
  });

  it("reads a file's header once: the verdict is cached until the file changes", async () => {
    const copy = path.join(tempDir(), "copy.gguf");
    fs.copyFileSync(stories, copy);
    const when = Math.floor(Date.now() / 1000) - 60; // whole seconds: set back exactly below
    fs.utimesSync(copy, when, when);
    assert.equal((await callApi(core, "POST", "/api/models/import", { path: copy })).status, 200);
    const verdict = async () => {
      const body = await models();
      const m = body.installed.find((x) => x.id === "local:copy");
      assert.ok(m, JSON.stringify(body.installed.map((x) => x.id)));
      return m.training;
    };
    assert.equal((await verdict())?.fits, true);
    // Same size and modification time, other bytes: not read again.
    fs.writeFileSync(copy, Buffer.alloc(fs.statSync(copy).size, 7));
    fs.utimesSync(copy, when, when);
    assert.equal((await verdict())?.fits, true);
    // A changed file is read again (and is not a model any more: no verdict).
    fs.utimesSync(copy, when, when + 5);
    assert.equal(await verdict(), null);
  });
});
