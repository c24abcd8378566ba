/**
 * Load settings per model (issue 32): context length, GPU layers, threads and backend, stored per
 * model (by its file, as its learning line), applied when it loads, and a reload of the model
 * serving now that keeps its adapter. Real node-llama-cpp on the tiny qwen2 model (trained
 * context 32768): the engine's context really changes. Refused values get a 400 with the reason;
 * a backend that cannot run here falls back to the CPU with a notice; `clawrl serve`'s flags
 * (startCore's engine options) win over the stored values for their run.
 */
import assert from "node:assert/strict";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { parseLoadFlags } from "../../electron/core/api/modelLoad.js";
import { ServedModel } from "../../electron/core/servedModel.js";
import { EventBus } from "../../electron/core/rollout/events.js";
import { ModelLoads } from "../../electron/core/inference/loadSettings.js";
import { callApi } from "../helpers/api.js";
import { runCli, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { writeLoraAdapter } from "../inference/loraFixture.js";

const env = { CLAWRL_THREADS: "1" };

describe("load settings per model", { timeout: 600_000 }, () => {
  let core: RunningCore;
  let model: string;
  let other: string;
  let id: string;
  const dataDir = tempDir("clawrl-load-");
  const call = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);
  const start = (engine: NonNullable<Parameters<typeof startCore>[0]>["engine"] = {}) =>
    startCore({
      model,
      dataDir,
      uiDir: "",
      engine: { sequences: 1, ...engine },
      training: { stepsPerRun: 2, restartBackoffMs: 200, worker: { niceness: 5 }, gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } },
    });

  before(async () => {
    Object.assign(process.env, env);
    model = await tinyModel({ arch: "qwen2" });
    other = await tinyModel({ arch: "qwen2", seed: 12 });
    core = await start();
    core.models.registry.importFile(model);
    core.models.registry.importFile(other);
    id = `local:${path.basename(model, ".gguf")}`;
    await call("PATCH", "/api/settings", { autoLearn: false, heldBackShare: 0 });
  });
  after(async () => {
    await core?.close();
  });

  it("shows the app's own choices while nothing is set", async () => {
    const r = await call("GET", `/api/models/${encodeURIComponent(id)}/load-settings`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.settings, { contextSize: null, gpuLayers: null, threads: null, backend: null });
    assert.equal(r.body.modelFile, path.basename(model));
    assert.equal(r.body.limits.trainContextSize, 32768);
    assert.equal(r.body.defaults.contextSize, core.engine!.info().contextSize, "auto: the context the engine picked");
    // Left to the app on the CPU, the trained context as far as the KV cache fits 30% of RAM (contextSize.ts): the tiny model's fits whole.
    assert.equal(core.engine!.info().contextSize, 32768);
    const idle = await call("GET", `/api/models/${encodeURIComponent(`local:${path.basename(other, ".gguf")}`)}/load-settings`);
    assert.deepEqual([idle.body.serving, idle.body.defaults.contextSize], [null, 32768], "a model not serving shows the same default");
    assert.equal(r.body.defaults.threads, 1, "CLAWRL_THREADS");
    assert.equal(r.body.defaults.backend, "auto");
    assert.equal(r.body.serving.contextSize, core.engine!.info().contextSize);
    assert.equal(r.body.serving.reloadNeeded, false);
    assert.deepEqual(r.body.overrides, {});
  });

  it("refuses values the model or the machine cannot take, with the reason, and keeps what was stored", async () => {
    const put = (body: unknown) => call("PUT", `/api/models/${encodeURIComponent(id)}/load-settings`, body);
    let r = await put({ contextSize: 65536 });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /context length 65,536 is longer than this model was trained for \(32,768 tokens\)/);
    r = await put({ threads: os.availableParallelism() + 1 });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /more than this computer runs at once/);
    r = await put({ gpuLayers: 500 });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /The model has 2 layers/);
    r = await put({ backend: "opencl" });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, "backend");
    r = await put({ contextSize: 8 });
    assert.equal(r.status, 400);
    r = await put({ contextSize: 1000, surprise: 1 });
    assert.equal(r.status, 400);
    assert.equal((await call("GET", "/api/models/nope/load-settings")).status, 404);
    // An id with slashes (a Hugging Face file's) comes as path segments, each encoded.
    const slashed = await call("GET", "/api/models/hf%3Aowner/repo/file.gguf/load-settings");
    assert.equal(slashed.status, 404);
    assert.match(slashed.body.error.message, /No installed model has the id 'hf:owner\/repo\/file.gguf'/);
    assert.equal((await call("GET", `/api/models/${encodeURIComponent(id)}/other`)).status, 404);
    assert.deepEqual(core.store.settings.modelLoad, {});
  });

  it("stores a model's settings, and a reload applies them to the engine and keeps its adapter", async () => {
    // An adapter serving (an imported checkpoint, the model's learning line).
    for (const q of ["what is a cat", "tell me a story"])
      assert.equal((await call("POST", "/v1/chat/completions", { messages: [{ role: "user", content: q }], max_tokens: 4 })).status, 200);
    const file = path.join(tempDir(), "a.gguf");
    writeLoraAdapter(file, model, { rank: 4, alpha: 8, magnitude: 0.02, seed: 3 });
    const imp = await call("POST", "/api/checkpoints/import", { path: file });
    assert.equal(imp.status, 200, JSON.stringify(imp.body));
    assert.equal((await call("GET", "/api/status")).body.adapter, "ckpt-1");

    const put = await call("PUT", `/api/models/${encodeURIComponent(id)}/load-settings`, { contextSize: 1024, threads: 2 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.settings, { contextSize: 1024, gpuLayers: null, threads: 2, backend: null });
    assert.equal(put.body.serving.reloadNeeded, true, "stored, not applied until a reload");
    assert.notEqual(core.engine!.info().contextSize, 1024);
    // Stored under the model's file, the key its learning line uses; the other model keeps its own (none).
    assert.deepEqual(Object.keys(core.store.settings.modelLoad), [path.basename(model)]);

    const r = await call("POST", "/api/models/reload", { id });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const info = core.engine!.info();
    assert.equal(info.contextSize, 1024, "the engine's context size changed");
    assert.equal(info.threads, 2);
    assert.equal(info.adapter, "ckpt-1", "the reload kept the model's adapter");
    assert.equal(r.body.serving.contextSize, 1024);
    assert.equal(r.body.serving.reloadNeeded, false);
    assert.equal((await call("GET", "/api/status")).body.model.contextSize, 1024);
    const answer = await call("POST", "/v1/chat/completions", { messages: [{ role: "user", content: "after the reload" }], max_tokens: 4 });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
  });

  it("a reload of a model that does not serve is refused", async () => {
    const r = await call("POST", "/api/models/reload", { id: `local:${path.basename(other, ".gguf")}` });
    assert.equal(r.status, 409);
    assert.match(r.body.error.message, /not the model serving now/);
  });

  it("a backend that cannot run here falls back to the CPU with a notice, and the app keeps serving", async () => {
    let r = await call("PUT", `/api/models/${encodeURIComponent(id)}/load-settings`, { backend: "metal" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    r = await call("POST", "/api/models/reload", { id });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.serving.backend, "cpu");
    assert.equal(r.body.serving.requested, "metal");
    assert.match(r.body.notice, /Metal could not be used \(Metal runs only on a Mac\), so the model runs on the CPU instead/);
    assert.equal(core.engine!.info().adapter, "ckpt-1");
    r = await call("PUT", `/api/models/${encodeURIComponent(id)}/load-settings`, { backend: null });
    assert.deepEqual(r.body.settings, { contextSize: 1024, gpuLayers: null, threads: 2, backend: null }, "a PUT changes only the fields it names");
  });

  it("survives a core restart: the model loads with its stored settings and its checkpoint", async () => {
    await core.close();
    core = await start();
    const info = core.engine!.info();
    assert.equal(info.contextSize, 1024);
    assert.equal(info.threads, 2);
    assert.equal(info.adapter, "ckpt-1");
    const r = await call("GET", `/api/models/${encodeURIComponent(id)}/load-settings`);
    assert.deepEqual(r.body.settings, { contextSize: 1024, gpuLayers: null, threads: 2, backend: null });
    assert.equal(r.body.serving.reloadNeeded, false);
  });

  it("clawrl serve's flags win over the stored values for their run", async () => {
    await core.close();
    core = await start({ maxContextSize: 512 });
    assert.equal(core.engine!.info().contextSize, 512);
    assert.equal(core.engine!.info().threads, 2, "a setting without a flag keeps its stored value");
    const r = await call("GET", `/api/models/${encodeURIComponent(id)}/load-settings`);
    assert.deepEqual(r.body.overrides, { contextSize: 512 });
    assert.equal(r.body.settings.contextSize, 1024, "the stored value is kept for later runs");
  });
});

describe("clawrl serve's load flags", () => {
  it("are parsed by the API's schema, with the flag named in the error", () => {
    assert.deepEqual(parseLoadFlags({ context: "4096", threads: "4", "gpu-layers": "max", gpu: "vulkan" }), {
      contextSize: 4096,
      threads: 4,
      gpuLayers: "max",
      backend: "vulkan",
    });
    assert.deepEqual(parseLoadFlags({ "gpu-layers": "12" }), { gpuLayers: 12 });
    assert.deepEqual(parseLoadFlags({}), {});
    assert.throws(() => parseLoadFlags({ context: "lots" }), /--context must be a whole number of tokens from 16 to 16,777,216, got 'lots'/);
    assert.throws(() => parseLoadFlags({ gpu: "opencl" }), /--gpu must be one of auto, cpu, vulkan, cuda, metal, got 'opencl'/);
    assert.throws(() => parseLoadFlags({ "gpu-layers": "-1" }), /--gpu-layers must be auto, max or a number of layers/);
    assert.throws(() => parseLoadFlags({ threads: "0" }), /--threads must be a whole number of threads/);
  });

  it("a bad flag stops clawrl serve before anything loads", () => {
    const r = runCli(["serve", "--context", "lots", "--data-dir", tempDir()]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--context must be a whole number of tokens/);
  });
});

describe("a reload that fails to load", () => {
  it("brings the model back with what it loaded with before (restoring), and says why", async () => {
    const calls: Array<{ path: string; restoring: boolean }> = [];
    let fail = false;
    const bus = new EventBus();
    const events: string[] = [];
    bus.on("models", (p) => events.push(String((p as { state?: string }).state)));
    const parts = (path: string) => ({ engine: { path }, close: async () => undefined });
    const served = new ServedModel<{ path: string }, ReturnType<typeof parts>>(parts("/m/a.gguf"), {
      bus,
      busy: () => false,
      pathOf: (e) => e.path,
      bringUp: async (path, restoring) => {
        calls.push({ path, restoring });
        if (fail && !restoring) throw new Error("the context could not be created");
        return parts(path);
      },
    });
    await served.reload({ id: "a", name: "A" });
    assert.deepEqual(calls, [{ path: "/m/a.gguf", restoring: false }], "a reload loads the same file again");
    fail = true;
    await assert.rejects(served.reload({ id: "a", name: "A" }), /the context could not be created/);
    assert.deepEqual(calls.slice(1), [
      { path: "/m/a.gguf", restoring: false },
      { path: "/m/a.gguf", restoring: true },
    ]);
    assert.equal(served.current().engine.path, "/m/a.gguf", "the model serves again");
    assert.equal(events.at(-1), "failed");
  });

  it("the core keeps what each model last loaded with, for the restore", () => {
    const loads = new ModelLoads();
    loads.loaded("/a/m.gguf", { backend: "cpu", maxContextSize: 1024 });
    assert.deepEqual(loads.lastGood("/elsewhere/m.gguf"), { backend: "cpu", maxContextSize: 1024 }, "by file name, as the learning line");
    assert.equal(loads.lastGood("/a/other.gguf"), undefined);
    loads.failed("/a/m.gguf", "The last reload failed.");
    assert.equal(loads.failure("/a/m.gguf"), "The last reload failed.");
    loads.failed("/a/m.gguf", null);
    assert.equal(loads.failure("/a/m.gguf"), null);
  });
});
