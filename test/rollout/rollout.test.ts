import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import type { ChatMessage } from "../../electron/core/api/chatTypes.js";
import { EventBus, type CoreEventName } from "../../electron/core/rollout/events.js";
import { Rollout, type TurnOrigin } from "../../electron/core/rollout/rollout.js";
import { apiErrorOf } from "../../electron/core/server/errors.js";
import { Store } from "../../electron/core/store/store.js";
import { tempDir } from "../helpers/cli.js";
import { OPENCLAW_SYSTEM, internalContext, result } from "./fixtures.js";

function setup(dir = tempDir()) {
  const store = Store.open(dir, { durable: false });
  const bus = new EventBus();
  const events: Array<{ name: CoreEventName; payload: unknown }> = [];
  bus.onAny((name, payload) => events.push({ name, payload }));
  let clock = Date.parse("2026-01-01T00:00:00Z");
  const rollout = new Rollout({ store, bus, now: () => clock });
  return { dir, store, bus, events, rollout, advance: (ms: number) => (clock += ms) };
}

const origin = (messages: ChatMessage[], extra: Partial<TurnOrigin> = {}): TurnOrigin => ({ headers: {}, bodyFields: {}, fromUi: false, messages, ...extra });
const user = (content: string): ChatMessage => ({ role: "user", content });
const assistant = (content: string): ChatMessage => ({ role: "assistant", content });
const sys: ChatMessage = { role: "system", content: OPENCLAW_SYSTEM };

describe("session resolution", () => {
  it("takes session id, turn type and done from headers, in any case and with array values", () => {
    const { rollout } = setup();
    const ctx = rollout.beginTurn(origin([user("hi")], { headers: { "X-Session-Id": ["abc-1"], "x-turn-type": "MAIN", "x-session-done": "yes" } }));
    assert.deepEqual({ ...ctx, turnId: "" }, { sessionId: "abc-1", turnId: "", turnType: "main", sessionDone: true });
  });

  it("falls back to body fields, and headers win over them", () => {
    const { rollout } = setup();
    const body = rollout.beginTurn(origin([user("hi")], { bodyFields: { session_id: "from-body", turn_type: "side", session_done: true } }));
    assert.equal(body.sessionId, "from-body");
    assert.equal(body.turnType, "side");
    assert.equal(body.sessionDone, true);
    const both = rollout.beginTurn(
      origin([user("hi")], {
        headers: { "x-session-id": "from-header", "x-turn-type": "main", "x-session-done": "0" },
        bodyFields: { session_id: "from-body", turn_type: "side", session_done: "on" },
      }),
    );
    assert.equal(both.sessionId, "from-header");
    assert.equal(both.turnType, "main");
    assert.equal(both.sessionDone, false);
  });

  it("rejects bad rl values with a 400 naming the field", () => {
    const { rollout } = setup();
    const cases: Array<[Partial<TurnOrigin>, RegExp, string]> = [
      [{ headers: { "x-turn-type": "primary" } }, /X-Turn-Type must be 'main' or 'side'/, "turn_type"],
      [{ headers: { "x-session-done": "maybe" } }, /X-Session-Done must be one of/, "session_done"],
      [{ headers: { "x-session-id": "has space" } }, /X-Session-Id must be/, "session_id"],
      [{ bodyFields: { session_id: { nested: 1 } } }, /session_id must be/, "session_id"],
      [{ bodyFields: { turn_type: 3 } }, /turn_type must be/, "turn_type"],
    ];
    for (const [o, msg, param] of cases) {
      assert.throws(
        () => rollout.beginTurn(origin([user("hi")], o)),
        (err: unknown) => [apiErrorOf(err)].every((api) => api.status === 400 && msg.test(api.message) && api.param === param),
      );
    }
    assert.equal(rollout.inFlight, 0);
  });

  it("defaults: main from our UI; outside clients with rl headers follow the setting (side); headerless clients are main unless turned off", () => {
    const { rollout, store } = setup();
    assert.equal(rollout.beginTurn(origin([user("a")], { fromUi: true })).turnType, "main");
    assert.equal(rollout.beginTurn(origin([user("a")], { headers: { "x-session-id": "s1" } })).turnType, "side");
    assert.equal(rollout.beginTurn(origin([user("a")])).turnType, "main");
    store.updateSettings({ headerlessTurnsMain: false });
    assert.equal(rollout.beginTurn(origin([user("a")])).turnType, "side");
    store.updateSettings({ outsideDefaultTurnType: "main" });
    assert.equal(rollout.beginTurn(origin([user("a")], { headers: { "x-session-id": "s2" } })).turnType, "main");
  });

  it("treats client session ids like __proto__ as plain keys", () => {
    const { rollout, store, dir } = setup();
    for (const id of ["__proto__", "constructor", "hasOwnProperty"]) {
      const ctx = rollout.beginTurn(origin([user("hi")], { headers: { "x-session-id": id, "x-turn-type": "main" } }));
      rollout.completeTurn(ctx, result("hello"));
      assert.equal(store.session(id)?.turnCount, 1);
    }
    store.close();
    const again = Store.open(dir, { durable: false });
    assert.deepEqual(
      again
        .sessions()
        .map((s) => s.id)
        .sort(),
      ["__proto__", "constructor", "hasOwnProperty"],
    );
    again.close();
  });

  it("gives a request without a session id that continues nothing a new session", () => {
    const { rollout } = setup();
    const a = rollout.beginTurn(origin([user("hello")]));
    rollout.completeTurn(a, result("Hi!"));
    const b = rollout.beginTurn(origin([user("hello")])); // same prompt, not a continuation of the answer
    assert.notEqual(b.sessionId, a.sessionId);
    const c = rollout.beginTurn(origin([user("hello"), assistant("Something we never said"), user("and?")]));
    assert.notEqual(c.sessionId, a.sessionId);
  });
});

describe("OpenClaw-shaped conversation without headers", () => {
  it("puts the second turn in the first turn's session and records only the new user message as the next state", () => {
    const { rollout, store, events } = setup();
    const t1 = rollout.beginTurn(origin([sys, user("What is the capital of France?"), internalContext(1)]));
    rollout.completeTurn(t1, result("Paris."));
    // Turn 2: system, first user, our answer, new user, a fresh internal-context block.
    const t2 = rollout.beginTurn(origin([sys, user("What is the capital of France?"), assistant("Paris."), user("And of Italy?"), internalContext(2)]));
    assert.equal(t2.sessionId, t1.sessionId);
    assert.equal(t2.turnType, "main");
    rollout.completeTurn(t2, result("Rome."));
    assert.deepEqual(store.readNextState(t1.turnId), [{ role: "user", content: "And of Italy?" }]);
    assert.equal(store.readNextState(t2.turnId), null);
    const ready = events.filter((e) => e.name === "turnReady").map((e) => e.payload);
    assert.deepEqual(ready, [{ turnId: t1.turnId, sessionId: t1.sessionId }]);
    const s = store.session(t1.sessionId)!;
    assert.equal(s.turnCount, 2);
    assert.equal(s.mainTurnCount, 2);
    assert.equal(s.title, "What is the capital of France?");
    assert.deepEqual(
      store.sessionTurns(t1.sessionId).map((e) => e.index),
      [0, 1],
    );
    // The recorded prompt is what was served, internal context included.
    assert.deepEqual(store.readTurn(t2.turnId).messages.at(-1), internalContext(2));
  });

  it("matches our answer when the client replays it as text parts with whitespace trimmed", () => {
    const { rollout } = setup();
    const t1 = rollout.beginTurn(origin([sys, user("hi")]));
    rollout.completeTurn(t1, result("  Hello there.\n"));
    const t2 = rollout.beginTurn(origin([sys, user("hi"), { role: "assistant", content: [{ type: "text", text: "Hello there." }] }, user("bye")]));
    assert.equal(t2.sessionId, t1.sessionId);
  });

  it("pairs a tool-calling answer with the tool result that follows it", () => {
    const { rollout, store } = setup();
    const t1 = rollout.beginTurn(origin([sys, user("list files"), internalContext(1)]));
    rollout.completeTurn(t1, result("", { finishReason: "tool_calls", toolCalls: [{ id: "call_1", name: "ls", arguments: '{"path": "."}' }] }));
    const toolMsg: ChatMessage = { role: "tool", tool_call_id: "call_1", content: "a.txt\nb.txt" };
    const replayed: ChatMessage = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "ls", arguments: '{"path":"."}' } }],
    };
    const t2 = rollout.beginTurn(origin([sys, user("list files"), replayed, toolMsg, internalContext(2)]));
    assert.equal(t2.sessionId, t1.sessionId);
    rollout.completeTurn(t2, result("There are two files."));
    assert.deepEqual(store.readNextState(t1.turnId), [toolMsg]);
    assert.deepEqual(store.readTurn(t1.turnId).toolCalls, [{ id: "call_1", name: "ls", arguments: '{"path": "."}' }]);
  });

  it("still finds the session after a restart (the prefix index is rebuilt from the log)", () => {
    const first = setup();
    const t1 = first.rollout.beginTurn(origin([sys, user("remember me")]));
    first.rollout.completeTurn(t1, result("I will."));
    first.store.close();
    const second = setup(first.dir);
    const t2 = second.rollout.beginTurn(origin([sys, user("remember me"), assistant("I will."), user("good")]));
    assert.equal(t2.sessionId, t1.sessionId);
    second.rollout.completeTurn(t2, result("ok"));
    assert.deepEqual(second.store.readNextState(t1.turnId), [{ role: "user", content: "good" }]);
  });
});

describe("next state with session headers", () => {
  it("side turns in the session neither get nor give next states", () => {
    const { rollout, store } = setup();
    const h = (type: string) => ({ "x-session-id": "chat-7", "x-turn-type": type });
    const m1 = rollout.beginTurn(origin([user("write a poem")], { headers: h("main") }));
    rollout.completeTurn(m1, result("Roses are red."));
    const side = rollout.beginTurn(origin([user("Give this chat a title: write a poem / Roses are red.")], { headers: h("side") }));
    rollout.completeTurn(side, result("Poem"));
    assert.equal(store.readNextState(m1.turnId), null);
    const m2 = rollout.beginTurn(origin([user("write a poem"), assistant("Roses are red."), user("make it longer")], { headers: h("main") }));
    rollout.completeTurn(m2, result("Roses are red, violets are blue."));
    assert.deepEqual(store.readNextState(m1.turnId), [{ role: "user", content: "make it longer" }]);
    assert.equal(store.readNextState(side.turnId), null);
    assert.deepEqual(
      store.sessionTurns("chat-7").map((e) => e.type),
      ["main", "side", "main"],
    );
  });

  it("when the client rewrote the history, the latest main turn gets what follows the last assistant message", () => {
    const { rollout, store } = setup();
    const h = { "x-session-id": "s-rw", "x-turn-type": "main" };
    const m1 = rollout.beginTurn(origin([user("q1")], { headers: h }));
    rollout.completeTurn(m1, result("a1"));
    const m2 = rollout.beginTurn(origin([user("q1"), assistant("a1 (edited by the client)"), user("q2")], { headers: h }));
    rollout.completeTurn(m2, result("a2"));
    assert.deepEqual(store.readNextState(m1.turnId), [{ role: "user", content: "q2" }]);
  });

  it("an aborted request records nothing and leaves no empty session behind", () => {
    const { rollout, store } = setup();
    const ctx = rollout.beginTurn(origin([user("hi")]));
    rollout.abortTurn(ctx, "client disconnected");
    assert.equal(store.session(ctx.sessionId), undefined);
    assert.equal([...store.turnEntries()].length, 0);
    assert.throws(() => rollout.completeTurn(ctx, result("late")), /not in progress/);
  });
});

describe("session close", () => {
  it("closes on session-done, and a later turn reopens it", () => {
    const { rollout, store, events } = setup();
    const ctx = rollout.beginTurn(origin([user("bye")], { headers: { "x-session-id": "d1", "x-turn-type": "main", "x-session-done": "true" } }));
    rollout.completeTurn(ctx, result("Goodbye."));
    assert.deepEqual([store.session("d1")?.closed, store.session("d1")?.closedReason], [true, "done"]);
    assert.ok(events.some((e) => e.name === "session" && (e.payload as { change: string }).change === "closed"));
    const again = rollout.beginTurn(origin([user("bye"), assistant("Goodbye."), user("wait")], { headers: { "x-session-id": "d1", "x-turn-type": "main" } }));
    rollout.completeTurn(again, result("Yes?"));
    assert.equal(store.session("d1")?.closed, false);
  });

  it("closes sessions idle for the configured minutes, not sooner, and not while a request is in flight", () => {
    const { rollout, store, advance } = setup();
    store.updateSettings({ sessionIdleMinutes: 30 });
    const a = rollout.beginTurn(origin([user("a")], { headers: { "x-session-id": "idle-a", "x-turn-type": "main" } }));
    rollout.completeTurn(a, result("A"));
    const b = rollout.beginTurn(origin([user("b")], { headers: { "x-session-id": "idle-b", "x-turn-type": "main" } }));
    rollout.completeTurn(b, result("B"));
    advance(29 * 60_000);
    assert.deepEqual(rollout.sweepIdle(), []);
    const busy = rollout.beginTurn(origin([user("b"), assistant("B"), user("more")], { headers: { "x-session-id": "idle-b", "x-turn-type": "main" } }));
    advance(2 * 60_000);
    assert.deepEqual(rollout.sweepIdle(), ["idle-a"]);
    assert.deepEqual([store.session("idle-a")?.closed, store.session("idle-a")?.closedReason], [true, "idle"]);
    rollout.completeTurn(busy, result("More B"));
    advance(31 * 60_000);
    assert.deepEqual(rollout.sweepIdle(), ["idle-b"]);
    assert.deepEqual(rollout.sweepIdle(), []);
  });
});

describe("sessions index after a crash", () => {
  it("is rebuilt from the log when activity updates had not reached state.json yet", () => {
    const dir = tempDir();
    const store = Store.open(dir, { durable: false, flushDelayMs: 3_600_000 }); // never flushes on its own here
    const rollout = new Rollout({ store, bus: new EventBus() });
    const h = { "x-session-id": "lazy", "x-turn-type": "main" };
    const t1 = rollout.beginTurn(origin([user("one")], { headers: h }));
    rollout.completeTurn(t1, result("1"));
    const t2 = rollout.beginTurn(origin([user("one"), assistant("1"), user("two")], { headers: h }));
    rollout.completeTurn(t2, result("2"));
    // The process "dies" here: state.json still says one turn; the log has two.
    const onDisk = JSON.parse(fs.readFileSync(path.join(dir, "state.json"), "utf8"));
    assert.equal(onDisk.sessions.lazy.turnCount, 1);
    const reopened = Store.open(dir, { durable: false });
    assert.deepEqual([reopened.session("lazy")?.turnCount, reopened.session("lazy")?.mainTurnCount], [2, 2]);
    assert.equal(reopened.session("lazy")?.lastActivityAt, reopened.turnEntry(t2.turnId)?.time);
    reopened.close();
  });
});

describe("turn records", () => {
  it("keep exactly what was served, with later feedback and judge results attached by turn id", () => {
    const { rollout, store } = setup();
    const ctx = rollout.beginTurn(origin([user("hi")], { fromUi: true, headers: { "x-session-id": "rec" } }));
    rollout.completeTurn(
      ctx,
      result("Hello you", {
        adapter: "v3",
        promptTokens: [5, 6, 7, 8],
        responseTokens: [9, 10],
        tokenLogprobs: [-0.25, -1.5],
        sampling: { temperature: 0.7, topP: 0.9, seed: 42, maxTokens: 64 },
      }),
    );
    const rec = store.readTurn(ctx.turnId);
    assert.deepEqual(
      {
        type: rec.type,
        index: rec.index,
        adapter: rec.adapter,
        p: rec.promptTokens,
        r: rec.responseTokens,
        lp: rec.tokenLogprobs,
        text: rec.text,
        s: rec.sampling,
        fromUi: rec.fromUi,
      },
      {
        type: "main",
        index: 0,
        adapter: "v3",
        p: [5, 6, 7, 8],
        r: [9, 10],
        lp: [-0.25, -1.5],
        text: "Hello you",
        s: { temperature: 0.7, topP: 0.9, seed: 42, maxTokens: 64 },
        fromUi: true,
      },
    );
    store.appendFeedback(ctx.turnId, { thumbs: "down", hint: "Say who you are." });
    store.appendJudge({ turnId: ctx.turnId, reward: 1, votes: [{ score: 1, text: "\\boxed{1}" }], hints: [], representative: "\\boxed{1}", judge: "base" });
    const v = store.turnView(ctx.turnId);
    assert.deepEqual([v.reward, v.rewardSource, v.feedback?.hint, v.judge?.reward], [-1, "thumbs", "Say who you are.", 1]);
    store.appendFeedback(ctx.turnId, { thumbs: null });
    assert.deepEqual([store.turnView(ctx.turnId).reward, store.turnView(ctx.turnId).rewardSource], [1, "judge"]);
  });
});
