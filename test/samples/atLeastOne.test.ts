import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TurnSamplePool } from "../../electron/core/rollout/samples.js";
import { isHeldBack } from "../../electron/core/rollout/heldBack.js";
import { atLeastOneReward } from "../../electron/core/rollout/atLeastOne.js";
import type { EventBus } from "../../electron/core/rollout/events.js";
import type { JudgeVote } from "../../electron/core/store/records.js";
import type { SessionMeta } from "../../electron/core/store/state.js";
import { Store } from "../../electron/core/store/store.js";
import { parseSample } from "../../models/samples/sample.js";
import { isEligible } from "../../trainer/train/trainSteps.js";
import { advantagesFor } from "../../trainer/loss/advantages.js";
import { addTurn, tempStore } from "../judge/fixtures.js";

/** A judge line with these votes; the reward is their majority (0 on a tie), as the judge computes it. */
function judge(store: Store, bus: EventBus, turnId: string, scores: Array<-1 | 0 | 1 | null>, hints: string[] = []) {
  const valid = scores.filter((s): s is -1 | 0 | 1 => s !== null);
  const counts = new Map<number, number>();
  for (const s of valid) counts.set(s, (counts.get(s) ?? 0) + 1);
  const top = Math.max(0, ...counts.values());
  const leaders = [...counts].filter(([, c]) => c === top);
  const reward = (leaders.length === 1 ? leaders[0][0] : 0) as -1 | 0 | 1;
  const votes: JudgeVote[] = scores.map((score) => ({ score, text: score === null ? "no box" : `\\boxed{${score}}` }));
  store.appendJudge({ turnId, reward, votes, hints, representative: null, judge: "test" });
  bus.emit("judge", { turnId, sessionId: store.turnEntry(turnId)!.sessionId, reward });
}

function setClosed(store: Store, bus: EventBus, sessionId: string, closed: boolean) {
  const now = new Date().toISOString();
  const meta: SessionMeta = {
    ...(store.session(sessionId) ?? {
      id: sessionId,
      title: null,
      createdAt: now,
      lastActivityAt: now,
      turnCount: 0,
      mainTurnCount: 0,
      source: "outside" as const,
    }),
    closed,
    closedReason: closed ? "idle" : null,
  };
  store.putSession(meta);
  bus.emit("session", { session: meta, change: closed ? "closed" : "reopened" });
}

/** Session ids whose turns (by position) are not held back at the default share, so the fixtures are deterministic. */
function sessionWithNoneHeldBack(prefix: string, turns: number, share: number): string {
  for (let i = 0; ; i++) {
    const id = `${prefix}-${i}`;
    if (Array.from({ length: turns }, (_, k) => isHeldBack({ sessionId: id, index: k }, share)).every((h) => !h)) return id;
  }
}

describe("at-least-one: a finished session whose main turns all scored 0 yields one sample", () => {
  it("promotes the best-judged turn once the session is closed, with the weak reward (1 + mean vote) / 4", () => {
    const { store, bus } = tempStore();
    const share = store.settings.heldBackShare;
    const pool = new TurnSamplePool(store, bus);
    const sid = sessionWithNoneHeldBack("quiet", 3, share);
    // Three judged main turns (each one's next state is the following request), all majority 0.
    const t1 = addTurn(store, { sessionId: sid });
    const t2 = addTurn(store, { sessionId: sid });
    const t3 = addTurn(store, { sessionId: sid });
    judge(store, bus, t1, [0, 0, -1]); // mean −1/3
    judge(store, bus, t2, [1, 0, 0]); // mean +1/3: the best
    judge(store, bus, t3, [1, 0, -1]); // a tie → 0, mean 0
    assert.equal(pool.readyCount, 0, "an open session promotes nothing: it may still teach by itself");
    setClosed(store, bus, sid, true);
    const ready = pool.ready();
    assert.equal(ready.length, 1);
    assert.equal(ready[0].id, t2);
    assert.equal(ready[0].rewardSource, "atLeastOne");
    assert.equal(ready[0].reward, (1 + 1 / 3) / 4);
    assert.equal(ready[0].sample.reward, (1 + 1 / 3) / 4);
    assert.equal(ready[0].sample.hint, undefined);
    parseSample(ready[0].sample, 1, "pool");
    // Opened again (a new request continues it): withdrawn until it closes again.
    setClosed(store, bus, sid, false);
    assert.equal(pool.readyCount, 0);
    setClosed(store, bus, sid, true);
    assert.equal(pool.readyCount, 1);
    pool.close();
    store.close();
  });

  it("the reward: 0.25 for all-neutral votes, growing with the judge's lean, never half a thumbs up; ties go to the latest turn", () => {
    assert.equal(atLeastOneReward(0), 0.25);
    assert.equal(atLeastOneReward(1 / 3), 1 / 3);
    assert.ok(atLeastOneReward(0.99) < 0.5);
    const { store, bus } = tempStore();
    const pool = new TurnSamplePool(store, bus);
    const sid = sessionWithNoneHeldBack("tie", 2, store.settings.heldBackShare);
    const a = addTurn(store, { sessionId: sid });
    const b = addTurn(store, { sessionId: sid });
    judge(store, bus, a, [0, 0, 0]);
    judge(store, bus, b, [0, null, 0]); // an invalid vote is dropped: mean 0, a tie with a
    setClosed(store, bus, sid, true);
    assert.deepEqual(
      pool.ready().map((i) => [i.id, i.reward]),
      [[b, 0.25]],
    );
    pool.close();
    store.close();
  });

  it("promotes nothing when a turn teaches by itself, when every turn leaned negative, or when nothing was judged", () => {
    const { store, bus } = tempStore();
    const share = store.settings.heldBackShare;
    const pool = new TurnSamplePool(store, bus);
    const taught = sessionWithNoneHeldBack("taught", 2, share);
    const x = addTurn(store, { sessionId: taught });
    const y = addTurn(store, { sessionId: taught });
    judge(store, bus, x, [0, 0, 0]);
    judge(store, bus, y, [-1, -1, 0]); // a −1: a sample of its own
    const negative = sessionWithNoneHeldBack("negative", 1, share);
    judge(store, bus, addTurn(store, { sessionId: negative }), [-1, 0, 0]);
    const unjudged = sessionWithNoneHeldBack("unjudged", 1, share);
    addTurn(store, { sessionId: unjudged });
    const hinted = sessionWithNoneHeldBack("hinted", 1, share);
    judge(store, bus, addTurn(store, { sessionId: hinted }), [0, 0, 0], ["Say it in kilometres."]);
    for (const s of [taught, negative, unjudged, hinted]) setClosed(store, bus, s, true);
    const ready = pool.ready();
    assert.deepEqual(
      ready.map((i) => [i.sessionId, i.rewardSource ?? i.hintSource]).sort(),
      [
        [hinted, "judge"],
        [taught, "judge"],
      ].sort(),
    );
    assert.equal(ready.find((i) => i.sessionId === taught)!.id, y);
    pool.close();
    store.close();
  });

  it("a session yields its promoted sample once: after it is trained, a later verdict does not promote another turn", () => {
    const { store, bus } = tempStore();
    const pool = new TurnSamplePool(store, bus);
    const sid = sessionWithNoneHeldBack("once", 2, store.settings.heldBackShare);
    const a = addTurn(store, { sessionId: sid });
    const b = addTurn(store, { sessionId: sid });
    judge(store, bus, a, [1, 0, 0]);
    setClosed(store, bus, sid, true);
    assert.deepEqual(
      pool.ready().map((i) => i.id),
      [a],
    );
    pool.claim([a], "r1");
    pool.commit("r1");
    judge(store, bus, b, [1, 1, 0, 0, 0]); // judged later, better: still majority 0
    assert.equal(pool.readyCount, 0);
    pool.close();
    store.close();
  });

  it("trains: the trainer takes a weak reward as the RL term's advantage on every token (reward 0 stays masked out)", () => {
    const s = (reward: number) => ({ tokens: [1, 2, 3, 4], promptLength: 2, reward, teachers: [], truncated: false });
    assert.equal(isEligible("binary", s(0.25)), true);
    assert.equal(isEligible("combined", s(0.25)), true);
    assert.equal(isEligible("binary", s(0)), false);
    assert.equal(isEligible("opd", s(0.25)), false, "OPD needs a hint");
    assert.deepEqual(advantagesFor("binary", { reward: 0.25, oldLp: [-1, -2] }), [0.25, 0.25]);
    assert.deepEqual(advantagesFor("combined", { reward: 0.25, oldLp: [-1, -2] }), [0.25, 0.25]);
    assert.throws(() => parseSample({ prompt_tokens: [1], response_tokens: [2], reward: 1.5 }, 1), /reward must be a number from -1 to 1/);
  });
});

describe("held-back slice: main turns never trained on, decided per turn", () => {
  it("is deterministic, about the share asked for, and held-back turns make no sample even with thumbs", () => {
    const n = 4000;
    const held = Array.from({ length: n }, (_, i) => isHeldBack({ sessionId: `s-${i >> 2}`, index: i & 3 }, 0.125)).filter(Boolean).length;
    assert.ok(Math.abs(held / n - 0.125) < 0.02, `${held} of ${n}`);
    assert.equal(isHeldBack({ sessionId: "abc", index: 1 }, 0.125), isHeldBack({ sessionId: "abc", index: 1 }, 0.125));
    assert.equal(isHeldBack({ sessionId: "abc", index: 1 }, 0), false);

    const { store, bus } = tempStore();
    const pool = new TurnSamplePool(store, bus);
    const ids = Array.from({ length: 24 }, (_, i) => addTurn(store, { sessionId: `hb-${i}` }));
    for (const id of ids) {
      const fb = store.appendFeedback(id, { thumbs: "up" });
      bus.emit("feedback", { turnId: id, sessionId: store.turnEntry(id)!.sessionId, feedback: fb });
    }
    const heldIds = ids.filter((id) => isHeldBack(store.turnEntry(id)!, store.settings.heldBackShare));
    assert.ok(heldIds.length > 0 && heldIds.length < ids.length, "the fixture has both kinds");
    assert.deepEqual(new Set(pool.ready().map((i) => i.id)), new Set(ids.filter((id) => !heldIds.includes(id))));
    // Turned off: every turn trains (the pool follows the setting).
    const settings = store.updateSettings({ heldBackShare: 0 });
    bus.emit("settings", { settings });
    assert.equal(pool.readyCount, ids.length);
    pool.close();
    store.close();
  });
});
