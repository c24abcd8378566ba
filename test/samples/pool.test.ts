import assert from "node:assert/strict";
import fs from "node:fs";
import { describe, it } from "node:test";
import { TurnSamplePool } from "../../electron/core/rollout/samples.js";
import type { EventBus } from "../../electron/core/rollout/events.js";
import { Store } from "../../electron/core/store/store.js";
import { parseSample } from "../../models/samples/sample.js";
import { addTurn, tempStore as judgeStore } from "../judge/fixtures.js";

/** These tests are about which turns make samples: none held back (heldBack.test.ts is about that). */
function tempStore() {
  const t = judgeStore();
  t.store.updateSettings({ heldBackShare: 0 });
  return t;
}

function judge(store: Store, bus: EventBus, turnId: string, reward: -1 | 0 | 1, hints: string[] = []) {
  store.appendJudge({ turnId, reward, votes: [{ score: reward, text: `\\boxed{${reward}}` }], hints, representative: null, judge: "test" });
  bus.emit("judge", { turnId, sessionId: store.turnEntry(turnId)!.sessionId, reward });
}
function feedback(store: Store, bus: EventBus, turnId: string, change: { thumbs?: "up" | "down" | null; hint?: string | null }) {
  const fb = store.appendFeedback(turnId, change);
  bus.emit("feedback", { turnId, sessionId: store.turnEntry(turnId)!.sessionId, feedback: fb });
}

describe("sample pool: which turns become samples (combined method's table)", () => {
  it("hint and ±1 → both terms; hint only → OPD; ±1 only → RL; neither or 0 without hint → none; explicit feedback overrides the judge", () => {
    const { store, bus } = tempStore();
    const pool = new TurnSamplePool(store, bus);
    const msgs = [
      { role: "system" as const, content: "Be helpful." },
      { role: "user" as const, content: "Distance to the moon?" },
    ];
    const t = Object.fromEntries(
      ["upOnly", "upHint", "hintOnly", "judgeNeg", "judge0Hint", "judge0", "none", "downOverJudge", "thumbsDropJudgeHints", "hintKeepsJudgeReward", "side"].map(
        (k) => [k, addTurn(store, { messages: msgs, type: k === "side" ? "side" : "main" })],
      ),
    );
    feedback(store, bus, t.upOnly, { thumbs: "up" });
    feedback(store, bus, t.upHint, { thumbs: "down", hint: "Give kilometres, not miles." });
    feedback(store, bus, t.hintOnly, { hint: "Mention it varies over the orbit." });
    judge(store, bus, t.judgeNeg, -1);
    judge(store, bus, t.judge0Hint, 0, ["Say the average distance.", "Use km."]);
    judge(store, bus, t.judge0, 0);
    judge(store, bus, t.downOverJudge, 1);
    feedback(store, bus, t.downOverJudge, { thumbs: "down" });
    judge(store, bus, t.thumbsDropJudgeHints, 0, ["A judge hint that thumbs drop."]);
    feedback(store, bus, t.thumbsDropJudgeHints, { thumbs: "up" });
    judge(store, bus, t.hintKeepsJudgeReward, -1, ["judge hint, replaced"]);
    feedback(store, bus, t.hintKeepsJudgeReward, { hint: "The user's own hint wins." });
    feedback(store, bus, t.side, { thumbs: "up" });

    const byId = new Map(pool.ready().map((i) => [i.id, i]));
    const view = (id: string) => {
      const i = byId.get(id);
      return i ? { reward: i.reward, hints: i.hints, src: [i.rewardSource, i.hintSource] } : null;
    };
    assert.deepEqual(view(t.upOnly), { reward: 1, hints: [], src: ["thumbs", null] });
    assert.deepEqual(view(t.upHint), { reward: -1, hints: ["Give kilometres, not miles."], src: ["thumbs", "feedback"] });
    assert.deepEqual(view(t.hintOnly), { reward: null, hints: ["Mention it varies over the orbit."], src: [null, "feedback"] });
    assert.deepEqual(view(t.judgeNeg), { reward: -1, hints: [], src: ["judge", null] });
    assert.deepEqual(view(t.judge0Hint), { reward: null, hints: ["Say the average distance.", "Use km."], src: [null, "judge"] });
    assert.equal(view(t.judge0), null);
    assert.equal(view(t.none), null);
    assert.deepEqual(view(t.downOverJudge), { reward: -1, hints: [], src: ["thumbs", null] });
    assert.deepEqual(view(t.thumbsDropJudgeHints), { reward: 1, hints: [], src: ["thumbs", null] });
    assert.deepEqual(view(t.hintKeepsJudgeReward), { reward: -1, hints: ["The user's own hint wins."], src: ["judge", "feedback"] });
    assert.equal(view(t.side), null);
    assert.equal(pool.readyCount, 8);

    // What the trainer gets: the served tokens and log-probs, the adapter, the prompt messages; valid for its schema.
    const both = byId.get(t.upHint)!;
    assert.deepEqual(both.sample, {
      prompt_tokens: [1, 2, 3, 4],
      response_tokens: [7, 8, 9],
      logprobs: [-0.5, -1, -0.25],
      reward: -1,
      hint: "Give kilometres, not miles.",
      messages: msgs,
    });
    assert.equal(both.adapter, "v3");
    assert.deepEqual(byId.get(t.judge0Hint)!.sample.hints, ["Say the average distance.", "Use km."]);
    assert.equal(byId.get(t.upOnly)!.sample.messages, undefined);
    for (const i of pool.ready()) parseSample(i.sample, 1, "pool");
    pool.close();
    store.close();
  });

  it("a feedback change on a turn not yet trained updates its sample; the ready count is announced", () => {
    const { store, bus } = tempStore();
    const pool = new TurnSamplePool(store, bus);
    const counts: number[] = [];
    pool.onChange((n) => counts.push(n));
    const a = addTurn(store);
    feedback(store, bus, a, { thumbs: "up" });
    assert.equal(pool.get(a)!.reward, 1);
    feedback(store, bus, a, { thumbs: "down" });
    assert.equal(pool.ready()[0].sample.reward, -1);
    feedback(store, bus, a, { hint: "Use kilometres." });
    assert.deepEqual([pool.ready()[0].sample.reward, pool.ready()[0].sample.hint], [-1, "Use kilometres."]);
    feedback(store, bus, a, { thumbs: null, hint: null });
    assert.equal(pool.readyCount, 0);
    assert.deepEqual(counts, [1, 1, 1, 0]);
    // The same change seen twice (no real change) is not announced again.
    bus.emit("feedback", { turnId: a, sessionId: "x", feedback: null });
    assert.deepEqual(counts, [1, 1, 1, 0]);
    pool.close();
    store.close();
  });
});

describe("sample pool: claim / commit / release", () => {
  it("claimed samples are not ready; release returns them; commit uses them for good; no double use", () => {
    const { store, bus } = tempStore();
    const pool = new TurnSamplePool(store, bus);
    const ids = [addTurn(store), addTurn(store), addTurn(store)];
    for (const id of ids) feedback(store, bus, id, { thumbs: "up" });
    pool.claim([ids[0], ids[1]], "run-1");
    assert.deepEqual(
      pool.ready().map((i) => i.id),
      [ids[2]],
    );
    assert.throws(() => pool.claim([ids[1]], "run-2"), /already claimed/);
    assert.throws(() => pool.claim(["nope"], "run-2"), /unknown sample nope/);
    assert.throws(() => pool.claim([ids[2]], "run-1"), /already holds a claim/);
    // Feedback changes while claimed: the change shows once released.
    feedback(store, bus, ids[1], { thumbs: "down" });
    pool.release("run-1");
    assert.deepEqual(
      pool.ready().map((i) => [i.id, i.reward]),
      [
        [ids[0], 1],
        [ids[1], -1],
        [ids[2], 1],
      ],
    );
    pool.claim([ids[0], ids[1]], "run-2");
    pool.commit("run-2");
    assert.deepEqual(
      pool.ready().map((i) => i.id),
      [ids[2]],
    );
    assert.throws(() => pool.claim([ids[0]], "run-3"), /already trained/);
    // A later feedback change on a trained turn does not bring it back.
    feedback(store, bus, ids[0], { thumbs: "down", hint: "Too late for this one." });
    assert.deepEqual(
      pool.ready().map((i) => i.id),
      [ids[2]],
    );
    pool.close();
    store.close();
  });

  it("crash safety: a new pool on the same log sees claimed-but-uncommitted samples ready again, and committed ones used", () => {
    const { dir, store, bus } = tempStore();
    const ids = [addTurn(store), addTurn(store), addTurn(store), addTurn(store)];
    for (const id of ids) feedback(store, bus, id, { thumbs: "up" });
    const pool = new TurnSamplePool(store, bus);
    pool.claim([ids[0]], "committed");
    pool.commit("committed");
    pool.claim([ids[1], ids[2]], "crashed"); // the trainer dies here: no commit, no release
    store.close();
    // A torn line at the end of the used list (crash mid-commit) does not count as a commit.
    fs.appendFileSync(pool.usedFile, `{"runId":"torn","ids":["${ids[3]}"`);

    const store2 = Store.open(dir, { durable: false });
    const pool2 = new TurnSamplePool(store2, null);
    assert.deepEqual(
      pool2.ready().map((i) => i.id),
      [ids[1], ids[2], ids[3]],
    );
    assert.ok(pool2.isUsed(ids[0]));
    pool2.claim([ids[1], ids[2], ids[3]], "retry");
    pool2.commit("retry");
    assert.equal(pool2.readyCount, 0);
    store2.close();
    const store3 = Store.open(dir, { durable: false });
    assert.equal(new TurnSamplePool(store3, null).readyCount, 0);
    store3.close();
  });

  it("a deleted session's samples leave the pool", () => {
    const { store, bus } = tempStore();
    const pool = new TurnSamplePool(store, bus);
    const a = addTurn(store, { sessionId: "gone" });
    const b = addTurn(store, { sessionId: "kept" });
    feedback(store, bus, a, { thumbs: "up" });
    feedback(store, bus, b, { thumbs: "up" });
    store.deleteSession("gone");
    bus.emit("sessionDeleted", { sessionId: "gone" });
    assert.deepEqual(
      pool.ready().map((i) => i.id),
      [b],
    );
    pool.close();
    store.close();
  });
});
