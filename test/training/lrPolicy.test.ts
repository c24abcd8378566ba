import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import type { TrainingStatus } from "../../electron/core/store/state.js";
import type { Store } from "../../electron/core/store/store.js";
import { LrPolicy, lrScalesOf, type LrHistoryEntry } from "../../electron/core/training/lrPolicy.js";
import { api, chat, checkpoints, feedback, startLearningCore, waitFor } from "./helpers.js";

/**
 * The learning-rate policy is written once, as events in the store: the loop reads its scale
 * there and the eval's replay (lrScalesOf) reads each run's scale there, so a checkpoint served
 * by hand, which the checkpoints' history cannot show, gives both the same rate.
 */

/** A store with only what the policy touches. */
function fakeStore(): Store {
  const state = { training: { activeCheckpoint: null } as unknown as TrainingStatus };
  return { state, updateState: (fn: (d: typeof state) => void) => fn(state) } as unknown as Store;
}

describe("the learning-rate policy as events", () => {
  it("a hand activation resets the scale for the loop and for the replay alike", () => {
    const store = fakeStore();
    const lr = new LrPolicy(store);
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    const history: LrHistoryEntry[] = [];
    // Run 1 at the full step, rejected: the loop goes on at half.
    assert.equal(lr.scale, 1);
    history.push({ n: 1, createdAt: at(1), verdict: "rejected" });
    assert.equal(lr.record("rejected", 1), 0.5);
    // The base model served by hand: the full step again.
    assert.equal(lr.record("activated", null), 1);
    // Run 2 trains at what the loop reads now.
    const loopScale = lr.scale;
    history.push({ n: 2, createdAt: at(2), verdict: "rejected" });
    lr.record("rejected", 2);
    const replayed = lrScalesOf(history, undefined, store.state.training.lrEvents);
    assert.equal(loopScale, 1);
    assert.equal(replayed.get(2), loopScale);
    assert.equal(replayed.get(1), 1);
    // The history alone cannot see the activation (what the replay read before the event log).
    assert.equal(lrScalesOf(history).get(2), 0.5);
  });

  it("seeds the log from the checkpoints of a data dir from before it, and the loop starts at the full step", () => {
    const store = fakeStore();
    const lr = new LrPolicy(store);
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    const history = [
      { n: 1, createdAt: at(1), verdict: "published" },
      { n: 2, createdAt: at(2), verdict: "rejected" },
    ];
    assert.equal(lr.begin(history), 1);
    const events = store.state.training.lrEvents!;
    assert.deepEqual(
      events.map((e) => [e.kind, e.checkpoint, e.scale]),
      [
        ["published", 1, 1],
        ["rejected", 2, 0.5],
        ["restart", null, 1],
      ],
    );
    assert.deepEqual([...lrScalesOf(history, undefined, events)], [...lrScalesOf(history)]);
    // A second start finds the full step already: nothing more is written.
    lr.begin(history);
    assert.equal(store.state.training.lrEvents!.length, 3);
  });
});

describe("a hand activation followed by training, in the running loop", () => {
  let core: RunningCore;
  before(async () => {
    // A bound no real update can meet: every candidate is rejected (each halves the step).
    core = await startLearningCore({ gate: { klBound: 1e-12 } });
  });
  after(async () => {
    await core?.close();
  });

  const idleStatus = () =>
    waitFor("idle", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.state === "idle" ? t : undefined;
    });

  it("trains at the same rate in the loop as lrScalesOf (the replay) says", async () => {
    const a = await chat(core, "one");
    const b = await chat(core, "two");
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down");
    await waitFor("candidate 1", async () => (await checkpoints(core)).find((x) => x.n === 1));
    assert.equal((await idleStatus()).lrScale, 0.5);
    // The base model served by hand: the loop trains on at the full step.
    assert.equal((await api(core, "POST", "/api/checkpoints/base/activate")).status, 200);
    const before2 = await idleStatus();
    assert.equal(before2.lrScale, 1);
    const c = await chat(core, "three");
    const d = await chat(core, "four");
    await feedback(core, c.turnId, "up");
    await feedback(core, d.turnId, "down");
    await waitFor("candidate 2", async () => (await checkpoints(core)).find((x) => x.n === 2));
    assert.equal((await idleStatus()).lrScale, 0.5);
    const history = (await checkpoints(core)).map((x) => ({ n: x.n, createdAt: x.createdAt, verdict: x.verdict }));
    const replayed = lrScalesOf(history, undefined, core.store.state.training.lrEvents);
    assert.equal(replayed.get(1), 1);
    assert.equal(replayed.get(2), before2.lrScale, "the replay trains run 2 at the rate the loop did");
  });
});
