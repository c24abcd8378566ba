import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import type { LrEvent, LrEventKind } from "../../electron/core/store/state.js";
import type { GateResult } from "../../electron/core/training/gate.js";
import { DRIFT_ROOM, leftRoom, MAX_STEPS_PER_RUN, MIN_STEPS_PER_RUN, stepsPerRunOf } from "../../electron/core/training/stepsPolicy.js";
import { api, chat, checkpoints, feedback, startLearningCore, waitFor } from "./helpers.js";

/**
 * Steps per cycle follow the gate (stepsPolicy.ts): the fewest after a rejection and at the
 * start, one more for each published candidate that left room in the drift budget, up to the
 * most. Read from the learning-rate policy's events, so a hand activation or a rollback resets both.
 */

const events = (...kinds: LrEventKind[]): LrEvent[] => kinds.map((kind, i) => ({ at: new Date(i).toISOString(), kind, checkpoint: i + 1, scale: 1 }));
const BUDGET = 0.2;
/** A gate result with this drift (the larger of recent and held-back). */
const drifted = (d: number): Pick<GateResult, "driftBudget" | "klToBase"> => ({
  driftBudget: BUDGET,
  klToBase: { recent: d, heldBack: d / 2, recentPositions: 10, heldBackPositions: 10 },
});
const roomy = () => drifted(0.01);

describe("the steps policy", () => {
  it("starts at the fewest, adds one per candidate published with room in the drift budget, up to the most", () => {
    assert.equal(stepsPerRunOf([], roomy), MIN_STEPS_PER_RUN);
    assert.equal(stepsPerRunOf(events("published"), roomy), MIN_STEPS_PER_RUN + 1);
    assert.equal(stepsPerRunOf(events("published", "published"), roomy), MIN_STEPS_PER_RUN + 2);
    assert.equal(stepsPerRunOf(events(...Array<LrEventKind>(10).fill("published")), roomy), MAX_STEPS_PER_RUN);
  });

  it("a candidate that used more than half the drift budget keeps the count; an unknown one too", () => {
    assert.equal(leftRoom(drifted(DRIFT_ROOM * BUDGET)), true);
    assert.equal(leftRoom(drifted(DRIFT_ROOM * BUDGET + 1e-6)), false);
    // The held-back turns count too.
    assert.equal(leftRoom({ driftBudget: BUDGET, klToBase: { recent: 0.01, heldBack: 0.15, recentPositions: 1, heldBackPositions: 1 } }), false);
    assert.equal(leftRoom(undefined), false);
    assert.equal(leftRoom({ driftBudget: BUDGET, klToBase: null }), false);
    // Published: 1 roomy, 2 near the budget, 3 roomy again.
    const gates = new Map([
      [1, drifted(0.01)],
      [2, drifted(0.15)],
      [3, drifted(0.05)],
    ]);
    const at = (n: number) => stepsPerRunOf(events(...Array<LrEventKind>(n).fill("published")), (c) => gates.get(c));
    assert.deepEqual([at(1), at(2), at(3)], [MIN_STEPS_PER_RUN + 1, MIN_STEPS_PER_RUN + 1, MIN_STEPS_PER_RUN + 2]);
  });

  it("goes back to the fewest after a rejection, a rollback, a hand activation, an import or a restart; a rejected import changes nothing", () => {
    for (const kind of ["rejected", "reverted", "activated", "imported", "restart"] as const) {
      assert.equal(stepsPerRunOf(events("published", "published", kind), roomy), MIN_STEPS_PER_RUN, kind);
      assert.equal(stepsPerRunOf(events("published", "published", kind, "published"), roomy), MIN_STEPS_PER_RUN + 1, kind);
    }
    assert.equal(stepsPerRunOf(events("published", "importRejected"), roomy), MIN_STEPS_PER_RUN + 1);
  });
});

describe("the loop takes the steps the policy says", () => {
  let core: RunningCore;
  before(async () => {
    // No fixed count: the app's policy. A gate that passes the tiny model's random adapters.
    core = await startLearningCore({ stepsPerRun: undefined, gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } });
  });
  after(async () => {
    await core?.close();
  });

  const idle = () => waitFor("idle", async () => ((await api(core, "GET", "/api/status")).json.training.state === "idle" ? true : undefined));

  /** Two rated turns make a batch; returns the steps the run that made checkpoint `n` took (its optimizer's count less its parent's). */
  async function cycle(n: number, parentSteps: number): Promise<number> {
    const a = await chat(core, `question ${n}a`);
    const b = await chat(core, `question ${n}b`);
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down");
    await waitFor(`checkpoint ${n}`, async () => (await checkpoints(core)).find((x) => x.n === n));
    await idle();
    // The supervisor's fields of the stored checkpoint (training/checkpoints.ts CheckpointEntry).
    const entry = core.store.state.checkpoints.find((c) => c.id === n) as { verdict?: string; totalSteps?: number } | undefined;
    assert.equal(entry?.verdict, "published", `checkpoint ${n} published`);
    return (entry?.totalSteps ?? 0) - parentSteps;
  }

  it("2 steps, then 3 after a publish; the base model served by hand goes back to 2", async () => {
    assert.equal(await cycle(1, 0), MIN_STEPS_PER_RUN);
    assert.equal(await cycle(2, MIN_STEPS_PER_RUN), MIN_STEPS_PER_RUN + 1);
    assert.equal((await api(core, "POST", "/api/checkpoints/base/activate")).status, 200);
    // From the base model: a fresh adapter, its optimizer at 0.
    assert.equal(await cycle(3, 0), MIN_STEPS_PER_RUN);
  });
});
