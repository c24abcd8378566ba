import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { Checkpoints, startupAdapter } from "../../electron/core/training/checkpoints.js";
import { tinyModel } from "../helpers/models.js";
import { api, chat, checkpoints, feedback, startLearningCore, waitFor } from "./helpers.js";

/**
 * A checkpoint is an adapter for the model it was trained on. After the served model is switched,
 * another model's checkpoints are listed with their model and refused with a reason (llama.cpp
 * would load an adapter of the same shapes on other weights without a word); the model with no
 * adapter can always be served again.
 */
describe("checkpoints belong to their model; the base model is one click away", { timeout: 600_000 }, () => {
  let core: RunningCore;
  let first: string;
  let other: string;
  before(async () => {
    core = await startLearningCore({ gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } });
    first = (await api(core, "GET", "/api/status")).json.model.path;
    other = await tinyModel({ arch: "qwen2", seed: 11 });
    assert.notEqual(path.basename(other), path.basename(first));
    core.models.registry.importFile(first);
    core.models.registry.importFile(other);
    for (const q of ["a story please", "another story"]) await feedback(core, (await chat(core, q)).turnId, "up");
    await waitFor("checkpoint 1 served", async () => ((await api(core, "GET", "/api/status")).json.adapter === "ckpt-1" ? true : undefined));
  });
  after(async () => {
    await core?.close();
  });

  const use = (file: string) => api(core, "POST", "/api/models/use", { id: `local:${path.basename(file, ".gguf")}` });

  it("records the model a checkpoint was trained on", async () => {
    const [c1] = (await api(core, "GET", "/api/checkpoints")).json.checkpoints;
    assert.equal(c1.n, 1);
    assert.equal(c1.model, path.basename(first));
    assert.equal(c1.forServedModel, true);
  });

  it("serves the model with no adapter, and training goes on from a fresh adapter", async () => {
    const r = await api(core, "POST", "/api/checkpoints/base/activate");
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.checkpoint, null);
    assert.equal(r.json.swap.version, "base");
    const st = (await api(core, "GET", "/api/status")).json;
    assert.equal(st.adapter, "base");
    assert.equal(st.training.activeCheckpoint, null);
    assert.equal((await chat(core, "after going back to the base")).adapter, "base");
    assert.ok((await checkpoints(core)).every((c) => !c.active));
    // The next checkpoint's parent is the base model, not checkpoint 1.
    for (const q of ["one more", "and one more"]) await feedback(core, (await chat(core, q)).turnId, "up");
    const c2 = await waitFor("checkpoint 2", async () => (await api(core, "GET", "/api/checkpoints")).json.checkpoints.find((c: { n: number }) => c.n === 2));
    assert.equal(c2.parent, null);
  });

  it("after a model switch, lists another model's checkpoint as such and refuses to serve it, saying which model it needs", async () => {
    const sw = await use(other);
    assert.equal(sw.status, 200, JSON.stringify(sw.json));
    assert.equal((await api(core, "GET", "/api/status")).json.adapter, "base");
    const list = (await api(core, "GET", "/api/checkpoints")).json.checkpoints as Array<{ n: number; model: string; forServedModel: boolean }>;
    assert.ok(list.length >= 1);
    for (const c of list) {
      assert.equal(c.model, path.basename(first));
      assert.equal(c.forServedModel, false);
    }
    const r = await api(core, "POST", "/api/checkpoints/1/activate");
    assert.equal(r.status, 409, JSON.stringify(r.json));
    assert.match(r.json.error.message, new RegExp(`checkpoint 1 was trained on ${path.basename(first).replace(".", "\\.")}.*switch to`));
    assert.equal((await api(core, "GET", "/api/status")).json.adapter, "base", "nothing changed");
  });

  it("serves it again once its model is back: first the checkpoint that model served last, with no hand restore (issue 32)", async () => {
    const lastOnFirst = Math.max(...(await checkpoints(core)).map((c) => c.n));
    assert.equal((await use(first)).status, 200);
    const st = (await api(core, "GET", "/api/status")).json;
    assert.equal(st.adapter, `ckpt-${lastOnFirst}`, "the model's own line came back with it");
    assert.equal(st.training.activeCheckpoint, lastOnFirst);
    assert.equal((await chat(core, "back on the first model")).adapter, `ckpt-${lastOnFirst}`);
    // And away and back once more: the other model served the base model, and does so again.
    assert.equal((await use(other)).status, 200);
    assert.equal((await api(core, "GET", "/api/status")).json.adapter, "base");
    assert.equal((await use(first)).status, 200);
    assert.equal((await api(core, "GET", "/api/status")).json.adapter, `ckpt-${lastOnFirst}`);
    const r = await api(core, "POST", "/api/checkpoints/1/activate");
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.checkpoint.forServedModel, true);
    assert.equal((await chat(core, "with checkpoint 1 again")).adapter, "ckpt-1");
  });

  it("at start on another model, the active checkpoint is not loaded: the base model is served and the index says so", () => {
    const ck = new Checkpoints(core.store, core.paths.checkpoints);
    assert.equal(core.store.state.training.activeCheckpoint, 1);
    assert.equal(startupAdapter(core.store, ck, other), undefined);
    assert.equal(core.store.state.training.activeCheckpoint, null);
    // A restart on the first model again: its line is remembered in the index, not lost.
    assert.equal(core.store.state.training.activeByModel?.[path.basename(first)], 1);
    assert.equal(startupAdapter(core.store, ck, first)?.version, "ckpt-1");
    assert.equal(core.store.state.training.activeCheckpoint, 1);
  });
});
