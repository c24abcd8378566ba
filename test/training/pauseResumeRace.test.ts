import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, checkpoints, feedback, startLearningCore, waitFor } from "./helpers.js";

/**
 * Resume right after Pause, before the stopped trainer process has exited (a user pressing
 * the Training page's Pause then Resume): the learner must carry on, not stay in "paused"
 * with paused false (it then never trained again and the UI showed Resume forever).
 */
describe("pause then resume before the trainer has exited", () => {
  let core: RunningCore;
  before(async () => {
    core = await startLearningCore({ stepsPerRun: 40, gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } });
  });
  after(async () => {
    await core?.close();
  });

  it("trains on: the run's samples are trained once, in a checkpoint", async () => {
    const a = await chat(core, "first question");
    const b = await chat(core, "second question");
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down");
    await waitFor("a run in progress", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.state === "training" && t.step >= 1 ? t : undefined;
    });
    // Synchronously back to back: the killed trainer's exit cannot be handled in between.
    const sup = core.training!;
    sup.pause();
    sup.resume();
    assert.equal(sup.status().paused, false);
    const c1 = await waitFor("checkpoint 1 after the resume", async () => (await checkpoints(core)).find((c) => c.n === 1), 600_000);
    assert.deepEqual(c1.samples, 2);
    const t = (await api(core, "GET", "/api/status")).json.training;
    assert.equal(t.paused, false);
    assert.notEqual(t.state, "paused", `the learner is stuck: ${JSON.stringify(t)}`);
  });
});
