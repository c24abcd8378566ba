import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, feedback, startLearningCore, waitFor } from "./helpers.js";

/**
 * Two faults an outside client found: a bodiless POST sent with a content-type (clients send
 * `application/json` on every call) got 400 "Body cannot be empty"; "Train now" while a run had
 * taken every ready sample got 409 "no samples are ready", which was false.
 */
describe("training control from an outside client", () => {
  let core: RunningCore;
  before(async () => {
    core = await startLearningCore({ stepsPerRun: 40, gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } });
  });
  after(async () => {
    await core?.close();
  });

  /** A POST with the given content-type header and no body at all. */
  const bodiless = async (route: string, contentType: string) => {
    const res = await fetch(`${core.url}${route}`, { method: "POST", headers: { authorization: `Bearer ${core.token}`, "content-type": contentType } });
    return { status: res.status, json: JSON.parse(await res.text()) };
  };

  it("accepts a bodiless POST whatever its content-type", async () => {
    for (const type of ["application/json", "application/json; charset=utf-8", "text/plain", "application/octet-stream"]) {
      const paused = await bodiless("/api/training/pause", type);
      assert.equal(paused.status, 200, `${type}: ${JSON.stringify(paused.json)}`);
      assert.equal(paused.json.training.paused, true);
      const resumed = await bodiless("/api/training/resume", type);
      assert.equal(resumed.status, 200, `${type}: ${JSON.stringify(resumed.json)}`);
      assert.equal(resumed.json.training.paused, false);
      // Nothing to train yet: the route's own answer, not a body-parsing error.
      const run = await bodiless("/api/training/run", type);
      assert.equal(run.status, 409, `${type}: ${JSON.stringify(run.json)}`);
      assert.match(run.json.error.message, /no samples are ready/);
    }
    // A body that is there and broken is still refused.
    const res = await fetch(`${core.url}/api/training/pause`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json" },
      body: "{",
    });
    assert.equal(res.status, 400);
  });

  it("answers Train now during a run that holds every ready sample with the run's state", async () => {
    const a = await chat(core, "first question");
    const b = await chat(core, "second question");
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down");
    // batchSize 2 with autoLearn: the run starts by itself and takes both samples.
    await waitFor("a run in progress", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.state === "training" && t.step >= 1 ? t : undefined;
    });
    const r = await bodiless("/api/training/run", "application/json");
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.started, false);
    assert.equal(r.json.running, true);
    assert.match(r.json.reason, /already in progress/);
    assert.equal(r.json.samplesWaiting, 0);
    assert.ok(["training", "evaluating", "publishing"].includes(r.json.training.state), r.json.training.state);
    assert.ok(r.json.training.runId);
    // Done with the run: pausing ends it at once (no need to wait for its 40 steps).
    await api(core, "POST", "/api/training/pause");
  });
});
