import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { startTinyCore } from "../openai/helpers.js";
import { internalContext } from "../rollout/fixtures.js";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** End to end through the real /v1 route and a real tiny model: what an outside client does, and what the UI then sees. */
describe("conversation capture through /v1 and the app API", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  const api = (route: string) => callApi(core, "GET", route);
  before(async () => {
    ({ core, client, modelId } = await startTinyCore());
  });
  after(async () => {
    await core?.close();
  });

  /** One streamed turn, as OpenClaw sends it; returns the assistant message to replay and the ids. */
  async function streamTurn(messages: Msg[], headers: Record<string, string> = {}) {
    const { data: stream, response } = await client.chat.completions
      .create({ model: modelId, messages, stream: true, stream_options: { include_usage: true }, max_completion_tokens: 8, seed: 3 }, { headers })
      .withResponse();
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    return {
      answer: { role: "assistant", content: text } as Msg,
      sessionId: response.headers.get("x-clawrl-session-id")!,
      turnId: response.headers.get("x-clawrl-turn-id")!,
    };
  }

  it("an OpenClaw-shaped client without headers: one session, two main turns, next state = the new user message; thumbs reach the session view", async () => {
    const events = await fetch(`${core.url}/api/events?token=${core.token}`);
    const system: Msg = { role: "system", content: "You are a helpful assistant inside OpenClaw. Use tools when needed." };
    const first: Msg = { role: "user", content: "Hello, who are you?" };
    const t1 = await streamTurn([system, first, internalContext(1) as Msg]);
    const t2 = await streamTurn([system, first, t1.answer, { role: "user", content: "Tell me a short story." }, internalContext(2) as Msg]);
    assert.equal(t2.sessionId, t1.sessionId);

    const list = await api("/api/sessions");
    const s = list.body.sessions.find((x: { id: string }) => x.id === t1.sessionId);
    assert.deepEqual([s.turnCount, s.mainTurnCount, s.source], [2, 2, "outside"]);
    const detail = await api(`/api/sessions/${t1.sessionId}`);
    assert.deepEqual(
      detail.body.turns.map((t: { turnId: string; type: string }) => [t.turnId, t.type]),
      [
        [t1.turnId, "main"],
        [t2.turnId, "main"],
      ],
    );
    assert.deepEqual(detail.body.turns[0].nextState, [{ role: "user", content: "Tell me a short story." }]);
    assert.equal(detail.body.turns[0].text, (t1.answer as { content: string }).content);

    const fb = await callApi(core, "POST", "/api/feedback", { turnId: t2.turnId, thumbs: "down", hint: "Make the story about a cat." });
    assert.equal(fb.status, 200);
    const after = await api(`/api/sessions/${t1.sessionId}`);
    assert.deepEqual(
      [after.body.turns[1].feedback.thumbs, after.body.turns[1].feedback.hint, after.body.turns[1].reward],
      ["down", "Make the story about a cat.", -1],
    );

    // The learning loop's trigger went out on the bus, and SSE carried it.
    const reader = events.body!.getReader();
    const dec = new TextDecoder();
    let text = "";
    while (!(text.includes("event: turnReady") && text.includes("event: feedback"))) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
    await reader.cancel();
    const ready = /event: turnReady\ndata: (.*)/.exec(text);
    assert.ok(ready, text);
    assert.deepEqual(JSON.parse(ready[1]), { turnId: t1.turnId, sessionId: t1.sessionId });
  });

  it("headers name the session and type; X-Session-Done closes it; bad header values are 400s", async () => {
    const h = { "X-Session-Id": "plugin-session-1", "X-Turn-Type": "main" };
    const a = await streamTurn([{ role: "user", content: "hi" }], h);
    assert.equal(a.sessionId, "plugin-session-1");
    const side = await streamTurn([{ role: "user", content: "Summarise: hi" }], { "X-Session-Id": "plugin-session-1", "X-Turn-Type": "side" });
    const b = await streamTurn([{ role: "user", content: "hi" }, a.answer, { role: "user", content: "bye" }], { ...h, "X-Session-Done": "1" });
    const detail = await api("/api/sessions/plugin-session-1");
    assert.deepEqual(
      detail.body.turns.map((t: { type: string }) => t.type),
      ["main", "side", "main"],
    );
    assert.deepEqual(detail.body.turns[0].nextState, [{ role: "user", content: "bye" }]);
    assert.equal(detail.body.turns[1].turnId, side.turnId);
    assert.equal(detail.body.turns[2].turnId, b.turnId);
    assert.deepEqual([detail.body.session.closed, detail.body.session.closedReason], [true, "done"]);

    const before = [...core.store.turnEntries()].length;
    await assert.rejects(
      client.chat.completions.create({ model: modelId, messages: [{ role: "user", content: "x" }], max_tokens: 2 }, { headers: { "X-Turn-Type": "primary" } }),
      (err: { status?: number; message?: string }) => err.status === 400 && /X-Turn-Type must be 'main' or 'side'/.test(err.message ?? ""),
    );
    assert.equal([...core.store.turnEntries()].length, before);
  });
});
