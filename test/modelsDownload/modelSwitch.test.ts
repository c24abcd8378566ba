// POST /api/models/use on a core that serves a model switches the served model at once:
// /v1/models, /api/status and the next answer say the new one; a file that cannot be loaded
// leaves the old one serving.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { apiErrorOf } from "../../electron/core/server/errors.js";
import { callApi } from "../helpers/api.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { smallValidGguf } from "../gguf/ggufBytes.js";

describe("switching the served model", { timeout: 180_000 }, () => {
  let core: RunningCore;
  let tiny: string;
  const events: Array<Record<string, unknown>> = [];
  const call = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);

  before(async () => {
    tiny = await tinyModel({ arch: "qwen2", seed: 3 });
    core = await startCore({ dataDir: tempDir(), port: 0, model: storiesModelPath(), training: false, engine: { threads: 1, sequences: 1 } });
    core.bus.on("models", (p) => events.push(p));
    core.models.registry.importFile(storiesModelPath());
    core.models.registry.importFile(tiny);
  });
  after(async () => {
    await core?.close();
  });

  it("status names the served model with its size and quantization", async () => {
    const s = await call("GET", "/api/status");
    assert.equal(s.status, 200);
    assert.equal(s.body.model.id, "stories260K");
    assert.equal(s.body.model.quantization, "F32");
    assert.equal(s.body.model.sizeBytes, fs.statSync(storiesModelPath()).size);
    assert.equal(s.body.modelSwitch, null);
  });

  it("switches at once and the next answer comes from the new model", async () => {
    const id = `local:${path.basename(tiny, ".gguf")}`;
    const use = await call("POST", "/api/models/use", { id });
    assert.equal(use.status, 200, JSON.stringify(use.body));
    assert.equal(use.body.restartRequired, false);
    const models = await call("GET", "/v1/models");
    assert.equal(models.body.data[0].id, path.basename(tiny, ".gguf"));
    const status = await call("GET", "/api/status");
    assert.equal(status.body.model.path, tiny);
    assert.equal(status.body.adapter, "base");
    const answer = await call("POST", "/v1/chat/completions", { model: "x", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.model, path.basename(tiny, ".gguf"));
    const states = events.filter((e) => e.change === "switch").map((e) => e.state);
    assert.deepEqual(
      states.filter((st, i) => st !== states[i - 1]),
      ["draining", "loading", "ready"],
    );
    assert.ok(
      events.some((e) => e.state === "loading" && e.progress === 1),
      "the load's progress reaches 100 %",
    );
    assert.equal((await call("GET", "/api/models")).body.restartRequired, false);
  });

  it("while a switch is under way: a /v1 request waits for the new model, a second switch gets 409", async () => {
    const stories = { id: "local:stories260K", name: "stories260K", path: storiesModelPath() };
    const first = core.served.switchTo(stories);
    // Inside the core the engine is unavailable meanwhile, with the reason (what a request would get after its wait).
    assert.throws(
      () => core.served.current(),
      (e: Error) => apiErrorOf(e).status === 503 && /being switched to stories260K/.test(e.message),
    );
    const answer = call("POST", "/v1/chat/completions", { model: "x", messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
    await assert.rejects(core.served.switchTo({ ...stories, path: tiny }), (e: Error) => apiErrorOf(e).status === 409);
    const r = await answer;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.model, "stories260K", "answered by the model switched to");
    await first;
  });

  it("keeps serving the old model when the new file cannot be loaded", async () => {
    const broken = path.join(tempDir(), "broken.gguf");
    // Imported whole (the registry checks the file), then replaced by a sound GGUF header with
    // no model in it: it passes the app's check, llama.cpp fails to load it mid-switch.
    const bytes = fs.readFileSync(storiesModelPath());
    fs.writeFileSync(broken, bytes);
    const imported = core.models.registry.importFile(broken);
    fs.writeFileSync(broken, smallValidGguf());
    const use = await call("POST", "/api/models/use", { id: imported.id });
    assert.ok(use.status >= 400, JSON.stringify(use.body));
    assert.match(use.body.error.message, /load|model/i);
    const models = await call("GET", "/v1/models");
    assert.equal(models.body.data[0].id, "stories260K", "the previous model is back");
    assert.equal(events.at(-1)?.state, "failed");
  });

  it("refuses a file cut short before switching (422): the served model is never closed", async () => {
    const cut = path.join(tempDir(), "cut.gguf");
    const bytes = fs.readFileSync(storiesModelPath());
    fs.writeFileSync(cut, bytes);
    const imported = core.models.registry.importFile(cut);
    fs.writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    const seen = events.length;
    const use = await call("POST", "/api/models/use", { id: imported.id });
    assert.equal(use.status, 422, JSON.stringify(use.body));
    assert.match(use.body.error.message, /refused before loading.*runs past the end/);
    assert.deepEqual(
      events.slice(seen).filter((e) => e.change === "switch"),
      [],
      "no switch started",
    );
    assert.equal((await call("GET", "/v1/models")).body.data[0].id, "stories260K");
  });
});

describe("a core started without a model loads one live", { timeout: 180_000 }, () => {
  let core: RunningCore;
  const call = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);
  before(async () => {
    core = await startCore({ dataDir: tempDir(), port: 0, training: false, engine: { threads: 1, sequences: 1 } });
  });
  after(async () => {
    await core?.close();
  });

  it("answers 503 'No model is loaded' until one is chosen, then serves it without a restart", async () => {
    const before = await call("POST", "/v1/chat/completions", { model: "x", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
    assert.equal(before.status, 503, JSON.stringify(before.body));
    assert.equal(before.body.error.code, "no_model");
    assert.equal((await call("GET", "/api/status")).body.model, null);
    const m = core.models.registry.importFile(storiesModelPath());
    const use = await call("POST", "/api/models/use", { id: m.id });
    assert.equal(use.status, 200, JSON.stringify(use.body));
    assert.equal(use.body.restartRequired, false);
    assert.equal((await call("GET", "/api/status")).body.model.id, "stories260K");
    const answer = await call("POST", "/v1/chat/completions", { model: "x", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 4 });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.model, "stories260K");
    assert.equal((await call("GET", "/api/models")).body.restartRequired, false);
  });
});
