import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { createServer } from "../../electron/core/server/app.js";
import { registerApiRoutes } from "../../electron/core/server/routes/api.js";
import { EventBus } from "../../electron/core/rollout/events.js";
import { Rollout } from "../../electron/core/rollout/rollout.js";
import { Store } from "../../electron/core/store/store.js";
import { tempDir } from "../helpers/cli.js";
import { result } from "../rollout/fixtures.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response bodies structurally and assert on them; `any` keeps that readable
type Json = any;
const json = (r: Response): Promise<Json> => r.json() as Promise<Json>;

/** Reads an SSE response until `pred` matches the text so far; returns that text. */
async function readSseUntil(res: Response, pred: (text: string) => boolean): Promise<string> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  while (!pred(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before the expected event; got:\n${text}`);
    text += dec.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

describe("app API", () => {
  let core: RunningCore;
  let auth: Record<string, string>;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${core.url}${path}`, {
      ...init,
      headers: { ...auth, ...(init.body ? { "content-type": "application/json" } : {}), ...(init.headers as Record<string, string>) },
    });

  /** A completed turn through the rollout, as the /v1 route records it. */
  function turn(sessionId: string, messages: Array<{ role: "user" | "assistant"; content: string }>, answer: string) {
    const ctx = core.rollout.beginTurn({ headers: { "x-session-id": sessionId, "x-turn-type": "main" }, bodyFields: {}, fromUi: true, messages });
    core.rollout.completeTurn(ctx, result(answer));
    return ctx;
  }

  before(async () => {
    core = await startCore({ dataDir: tempDir(), port: 0 });
    auth = { authorization: `Bearer ${core.token}` };
  });
  after(() => core.close());

  it("lists sessions and shows one with its turns and next states", async () => {
    const t1 = turn("conv-1", [{ role: "user", content: "hi" }], "Hello!");
    turn(
      "conv-1",
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: "Hello!" },
        { role: "user", content: "how are you" },
      ],
      "Fine.",
    );
    const list = await json(await api("/api/sessions"));
    const s = list.sessions.find((x: { id: string }) => x.id === "conv-1");
    assert.deepEqual([s.turnCount, s.mainTurnCount, s.title, s.closed], [2, 2, "hi", false]);
    const detail = await json(await api("/api/sessions/conv-1"));
    assert.equal(detail.session.id, "conv-1");
    assert.deepEqual(
      detail.turns.map((t: { text: string }) => t.text),
      ["Hello!", "Fine."],
    );
    assert.equal(detail.turns[0].turnId, t1.turnId);
    assert.deepEqual(detail.turns[0].nextState, [{ role: "user", content: "how are you" }]);
    assert.equal(detail.turns[0].promptTokens, undefined);
    assert.equal(detail.turns[0].responseTokenCount, 1);
    const withTokens = await json(await api("/api/sessions/conv-1?tokens=1"));
    assert.deepEqual(withTokens.turns[0].promptTokens, [1, 2, 3]);
    assert.equal((await api("/api/sessions/nope")).status, 404);
  });

  it("feedback round trip: set, change, withdraw; every change logged; unknown turn 404; bad body 400", async () => {
    const t = turn("conv-fb", [{ role: "user", content: "2+2?" }], "5");
    const post = (body: unknown) => api("/api/feedback", { method: "POST", body: JSON.stringify(body) });
    let r = await post({ turnId: t.turnId, thumbs: "down", hint: "2+2 is 4." });
    assert.equal(r.status, 200);
    let j = await json(r);
    assert.deepEqual([j.feedback.thumbs, j.feedback.hint, j.reward, j.rewardSource], ["down", "2+2 is 4.", -1, "thumbs"]);
    j = await json(await post({ turnId: t.turnId, thumbs: "up" }));
    assert.deepEqual([j.feedback.thumbs, j.feedback.hint, j.reward], ["up", "2+2 is 4.", 1]);
    j = await json(await post({ turnId: t.turnId, thumbs: null, hint: null }));
    assert.deepEqual([j.feedback, j.reward, j.rewardSource], [null, null, null]);
    await json(await post({ turnId: t.turnId, hint: "Check the sum." }));
    const detail = await json(await api("/api/sessions/conv-fb"));
    assert.deepEqual([detail.turns[0].feedback.thumbs, detail.turns[0].feedback.hint], [null, "Check the sum."]);
    assert.equal(core.store.readFeedbackHistory(t.turnId).length, 4);

    r = await post({ turnId: "no-such-turn", thumbs: "up" });
    assert.equal(r.status, 404);
    assert.match((await json(r)).error.message, /unknown turn 'no-such-turn'/);
    for (const [body, msg] of [
      [{ turnId: t.turnId }, /give thumbs and\/or hint/],
      [{ turnId: t.turnId, thumbs: "sideways" }, /'thumbs'/],
      [{ turnId: t.turnId, thumbs: "up", extra: 1 }, /unknown field 'extra'/],
      [{ thumbs: "up" }, /'turnId'/],
      [[1, 2], /must be a JSON object/],
    ] as const) {
      r = await post(body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match((await json(r)).error.message, msg);
    }
    r = await api("/api/feedback", { method: "POST", body: "{not json" });
    assert.equal(r.status, 400);
  });

  it("renames, closes and deletes sessions", async () => {
    turn("conv-del", [{ role: "user", content: "x" }], "y");
    let r = await api("/api/sessions/conv-del", { method: "PATCH", body: JSON.stringify({ title: "My chat" }) });
    assert.equal((await json(r)).session.title, "My chat");
    r = await api("/api/sessions/conv-del", { method: "PATCH", body: JSON.stringify({ closed: true }) });
    assert.deepEqual([(await json(r)).session.closed], [true]);
    r = await api("/api/sessions/conv-del", { method: "PATCH", body: JSON.stringify({ title: 7 }) });
    assert.equal(r.status, 400);
    r = await api("/api/sessions/conv-del", { method: "DELETE" });
    assert.equal(r.status, 204);
    assert.equal((await api("/api/sessions/conv-del")).status, 404);
    assert.equal((await api("/api/sessions/conv-del", { method: "DELETE" })).status, 404);
    const list = await json(await api("/api/sessions"));
    assert.ok(!list.sessions.some((s: { id: string }) => s.id === "conv-del"));
  });

  it("keeps a chat's own generation settings with its session: through later turns and a restart, cleared with null", async () => {
    const dataDir = tempDir();
    const own = { systemPrompt: "Answer in French.", temperature: 0.2, topP: 0.9, maxTokens: 300, toolSteps: 3 };
    let c = await startCore({ dataDir, port: 0 });
    const call = (path: string, body?: unknown) =>
      fetch(`${c.url}${path}`, {
        method: body === undefined ? "GET" : "PATCH",
        headers: { authorization: `Bearer ${c.token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const record = (content: string) => {
      const ctx = c.rollout.beginTurn({
        headers: { "x-session-id": "conv-gen", "x-turn-type": "main" },
        bodyFields: {},
        fromUi: true,
        messages: [{ role: "user", content }],
      });
      c.rollout.completeTurn(ctx, result("ok"));
    };
    try {
      assert.equal((await call("/api/sessions/conv-gen", { generation: own })).status, 404, "no such session yet");
      record("first");
      assert.equal((await json(await call("/api/sessions/conv-gen"))).session.generation, undefined, "a new chat follows the defaults");
      let r = await call("/api/sessions/conv-gen", { generation: own });
      assert.deepEqual((await json(r)).session.generation, own);
      for (const bad of [{ ...own, temperature: 3 }, { ...own, colour: "red" }, { systemPrompt: "x" }]) {
        r = await call("/api/sessions/conv-gen", { generation: bad });
        assert.equal(r.status, 400, JSON.stringify(bad));
        assert.equal((await json(r)).error.type, "invalid_request_error");
      }
      record("second"); // a turn rewrites the session's counts and keeps its settings
      await c.close();
      c = await startCore({ dataDir, port: 0 });
      const s = (await json(await call("/api/sessions/conv-gen"))).session;
      assert.deepEqual([s.generation, s.mainTurnCount], [own, 2]);
      r = await call("/api/sessions/conv-gen", { generation: null });
      assert.equal((await json(r)).session.generation, undefined, "null: back to the defaults");
    } finally {
      await c.close();
    }
  });

  it("reads and changes settings, refusing bad values with the field named", async () => {
    const s = await json(await api("/api/settings"));
    assert.deepEqual([s.learningMethod, s.batchSize, s.judgeVotes, s.sessionIdleMinutes, s.outsideDefaultTurnType], ["combined", 16, 3, 30, "side"]);
    let r = await api("/api/settings", {
      method: "PATCH",
      body: JSON.stringify({ batchSize: 8, judgeSource: { kind: "endpoint", baseUrl: "http://127.0.0.1:9/v1", model: "judge" } }),
    });
    assert.equal(r.status, 200);
    const changed = await json(r);
    assert.deepEqual([changed.batchSize, changed.judgeSource.kind, changed.learningMethod], [8, "endpoint", "combined"]);
    assert.equal((await json(await api("/api/settings"))).batchSize, 8);
    r = await api("/api/settings", { method: "PATCH", body: JSON.stringify({ batchSize: 0 }) });
    assert.equal(r.status, 400);
    assert.match((await json(r)).error.message, /'batchSize'/);
    r = await api("/api/settings", { method: "PATCH", body: JSON.stringify({ learningMethod: "magic" }) });
    assert.match((await json(r)).error.message, /'learningMethod'/);
    r = await api("/api/settings", { method: "PATCH", body: JSON.stringify({ colour: "red" }) });
    assert.match((await json(r)).error.message, /unknown field 'colour'/);
    assert.equal((await json(await api("/api/settings"))).batchSize, 8);
  });

  it("reports status without a model loaded", async () => {
    const s = await json(await api("/api/status"));
    assert.deepEqual([s.model, s.adapter, s.training.state], [null, "base", "idle"]);
    assert.ok(s.turns >= 1);
  });

  it("streams events over SSE with ?token=, and refuses the stream without a valid token", async () => {
    assert.equal((await fetch(`${core.url}/api/events`)).status, 401);
    assert.equal((await fetch(`${core.url}/api/events?token=wrong`)).status, 401);
    assert.equal((await fetch(`${core.url}/api/sessions?token=${core.token}`)).status, 401); // query token on this route only
    const res = await fetch(`${core.url}/api/events?token=${encodeURIComponent(core.token)}`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const t = turn("conv-sse", [{ role: "user", content: "ping" }], "pong");
    await api("/api/feedback", { method: "POST", body: JSON.stringify({ turnId: t.turnId, thumbs: "up" }) });
    const text = await readSseUntil(res, (s) => s.includes("event: feedback"));
    const events = text
      .split("\n\n")
      .filter((b) => b.includes("event: "))
      .map((b) => ({ name: /event: (\w+)/.exec(b)![1], data: JSON.parse(/data: (.*)/.exec(b)![1]) }));
    const turnEv = events.find((e) => e.name === "turn")!;
    assert.deepEqual([turnEv.data.turn.turnId, turnEv.data.turn.text], [t.turnId, "pong"]);
    const fb = events.find((e) => e.name === "feedback")!;
    assert.deepEqual([fb.data.turnId, fb.data.feedback.thumbs], [t.turnId, "up"]);
    assert.ok(events.some((e) => e.name === "session" && e.data.session.id === "conv-sse"));
  });
});

describe("app API wiring", () => {
  it("sends keep-alive comments, shows the engine's status, and closes open streams on shutdown", async () => {
    const store = Store.open(tempDir(), { durable: false });
    const bus = new EventBus();
    const rollout = new Rollout({ store, bus });
    const app = createServer({ token: "t".repeat(24) });
    registerApiRoutes(app, {
      store,
      rollout,
      bus,
      sseKeepAliveMs: 20,
      engineStatus: () => ({ model: { id: "tiny-qwen2" }, backend: "cpu", gpu: null, adapter: "v2", contextSize: 32768 }),
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const addr = app.server.address();
    const base = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
    try {
      const status = await json(await fetch(`${base}/api/status`, { headers: { authorization: `Bearer ${"t".repeat(24)}` } }));
      assert.deepEqual(
        [status.model.id, status.backend, status.adapter, status.contextSize, status.training.state],
        ["tiny-qwen2", "cpu", "v2", 32768, "idle"],
      );
      const res = await fetch(`${base}/api/events?token=${"t".repeat(24)}`);
      const text = await readSseUntil(res, (s) => (s.match(/: keep-alive\n\n/g) ?? []).length >= 2);
      assert.match(text, /^retry: \d+\n: connected\n\n/);
      const res2 = await fetch(`${base}/api/events?token=${"t".repeat(24)}`);
      const reader = res2.body!.getReader();
      await reader.read(); // connected
      await app.close(); // must not hang on the open stream
      for (;;) if ((await reader.read()).done) break;
    } finally {
      await app.close();
      store.close();
    }
  });
});
