/**
 * Issue 30, the learning meaning of a branch (docs/method.md "Edits and branches"): an edited
 * question gives the first answer of the question it replaced the edit as next state (the judge
 * reads it); a regenerate makes the answer it replaced a weak negative (−0.5) unless the user goes
 * back to it or it has a ±1 of its own; a stopped answer never trains.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ChatMessage } from "../../electron/core/api/chatTypes.js";
import { REGENERATE_REWARD, watchEditedQuestions } from "../../electron/core/rollout/branches.js";
import type { EventBus } from "../../electron/core/rollout/events.js";
import { TurnSamplePool } from "../../electron/core/rollout/samples.js";
import type { TurnRecord } from "../../electron/core/store/records.js";
import type { Store } from "../../electron/core/store/store.js";
import { tempStore } from "../judge/fixtures.js";

let n = 0;
/** Records a main turn under `parent` (null: a first question) as the rollout does, and tells the bus. */
function turn(store: Store, bus: EventBus, sessionId: string, messages: ChatMessage[], parent: string | null, extra: Partial<TurnRecord> = {}): string {
  const turnId = `b${++n}`;
  const time = new Date().toISOString();
  if (!store.session(sessionId)) {
    store.putSession({
      id: sessionId,
      title: null,
      createdAt: time,
      lastActivityAt: time,
      turnCount: 0,
      mainTurnCount: 0,
      closed: false,
      closedReason: null,
      source: "ui",
    });
  }
  const index = store.nextTurnIndex(sessionId);
  store.appendTurn({
    turnId,
    sessionId,
    index,
    type: "main",
    startedAt: time,
    time,
    fromUi: true,
    model: "tiny",
    adapter: "base",
    messages,
    promptTokens: [1, 2, 3],
    responseTokens: [4, 5, 6],
    tokenLogprobs: [-1, -1, -1],
    text: `answer ${n}`,
    finishReason: "stop",
    sampling: { temperature: 1, topP: 1 },
    sessionDone: false,
    prefixKey: `pk${n}`,
    parentTurnId: parent,
    ...extra,
  });
  bus.emit("turn", {
    turn: { turnId, sessionId, index, type: "main", time, adapter: "base", finishReason: "stop", responseTokenCount: 3, text: `answer ${n}` },
  });
  return turnId;
}

function setup() {
  const t = tempStore();
  t.store.updateSettings({ heldBackShare: 0 });
  const ready: string[] = [];
  t.bus.on("turnReady", (p) => ready.push(p.turnId));
  const off = watchEditedQuestions(t.store, t.bus);
  const pool = new TurnSamplePool(t.store, t.bus);
  return { ...t, ready, pool, close: () => (off(), pool.close()) };
}

const user = (content: string): ChatMessage => ({ role: "user", content });

describe("branches teach", () => {
  it("an edited question is the next state of the first answer of the question it replaced (when it had none)", () => {
    const { store, bus, ready, close } = setup();
    const q1 = [user("How far is the moon?")];
    const a = turn(store, bus, "s1", q1, null);
    const aRegen = turn(store, bus, "s1", q1, null);
    assert.deepEqual(ready, [], "a regenerate is no next state");
    const b = turn(store, bus, "s1", [user("How far is the moon, in km?")], null);
    assert.deepEqual(store.readNextState(a), [user("How far is the moon, in km?")]);
    assert.equal(store.readNextState(aRegen), null, "only the version's first answer");
    assert.deepEqual(ready, [a], "the judge is asked to read it");
    // A deeper edit: the second question of a conversation, edited; its first answer already continued keeps its next state.
    const q2 = [...q1, { role: "assistant" as const, content: "answer" }, user("And the sun?")];
    const c = turn(store, bus, "s1", q2, b);
    turn(store, bus, "s1", [...q2, { role: "assistant" as const, content: "answer" }, user("Thanks")], c);
    store.appendNextState({ turnId: c, sessionId: "s1", fromTurnId: c, messages: [user("Thanks")] });
    turn(store, bus, "s1", [...q1, { role: "assistant" as const, content: "answer" }, user("And the sun, in km?")], b);
    assert.deepEqual(store.readNextState(c), [user("Thanks")], "the first pairing wins");
    assert.deepEqual(ready, [a]);
    close();
  });

  it("a regenerate is a weak negative for the answer it replaced, unless the user goes back to it; thumbs win; a stopped answer never trains", () => {
    const { store, bus, pool, close } = setup();
    const q = [user("Name a colour.")];
    const a = turn(store, bus, "s2", q, null);
    assert.equal(pool.get(a), undefined, "alone, it teaches nothing yet");
    const a2 = turn(store, bus, "s2", q, null);
    const a3 = turn(store, bus, "s2", q, null, { stopped: true });
    assert.deepEqual([pool.get(a)?.reward, pool.get(a)?.rewardSource], [REGENERATE_REWARD, "regenerate"]);
    assert.deepEqual([pool.get(a2)?.reward, pool.get(a2)?.rewardSource], [REGENERATE_REWARD, "regenerate"]);
    assert.equal(pool.get(a3), undefined, "the last answer was replaced by nothing, and it is stopped");
    assert.equal(REGENERATE_REWARD, -0.5);

    // The user goes back to the first answer: it is no longer a negative; the second still is.
    store.setActiveBranch("s2", a);
    bus.emit("session", { session: store.session("s2")!, change: "updated" });
    assert.equal(pool.get(a), undefined);
    assert.equal(pool.get(a2)?.reward, REGENERATE_REWARD);

    // Thumbs win over the weak negative; a stopped answer trains on no feedback at all.
    for (const [id, thumbs] of [
      [a2, "up"],
      [a3, "down"],
    ] as const) {
      const fb = store.appendFeedback(id, { thumbs });
      bus.emit("feedback", { turnId: id, sessionId: "s2", feedback: fb });
    }
    assert.deepEqual([pool.get(a2)?.reward, pool.get(a2)?.rewardSource], [1, "thumbs"]);
    assert.equal(pool.get(a3), undefined, "stopped: never a sample");

    // A regenerate deleted: the answer it replaced is no longer replaced.
    const q2 = [user("Name a fruit.")];
    const f = turn(store, bus, "s3", q2, null);
    const f2 = turn(store, bus, "s3", q2, null);
    assert.equal(pool.get(f)?.reward, REGENERATE_REWARD);
    store.deleteTurn(f2);
    bus.emit("session", { session: store.session("s3")!, change: "updated" });
    assert.equal(pool.get(f), undefined);
    close();
  });
});
