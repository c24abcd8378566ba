import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import type { ChatMessage } from "../../electron/core/api/chatTypes.js";
import type { SessionExport, SessionReply, SessionSearchReply } from "../../electron/core/api/sessions.js";
import { callApi } from "../helpers/api.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

/** A real core on the tiny model, over a data dir that outlives it (a restart reopens it). */
async function start(dataDir: string, model: string): Promise<RunningCore> {
  return startCore({ model, dataDir, token: "test-token-tree", uiDir: "", engine: { maxContextSize: 1024, sequences: 2, threads: 1, backend: "cpu" } });
}

/** One answer as the chat window asks for it: streamed, X-Clawrl-Client: ui, in the session given. */
async function ask(core: RunningCore, messages: ChatMessage[], sessionId: string | null, opts: { stopAfterFirst?: boolean; maxTokens?: number } = {}) {
  const ctrl = new AbortController();
  const res = await fetch(`${core.url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${core.token}`,
      "content-type": "application/json",
      "x-clawrl-client": "ui",
      ...(sessionId ? { "x-session-id": sessionId } : {}),
    },
    body: JSON.stringify({ model: "m", messages, stream: true, max_tokens: opts.maxTokens ?? 6, temperature: 1 }),
    signal: ctrl.signal,
  });
  assert.equal(res.status, 200);
  const turnId = res.headers.get("x-clawrl-turn-id")!;
  const sid = res.headers.get("x-clawrl-session-id")!;
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let raw = "";
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += dec.decode(value, { stream: true });
    for (const m of raw.matchAll(/^data: (\{.*\})$/gm)) {
      const c = (JSON.parse(m[1]) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta?.content;
      if (c) text += c;
    }
    raw = raw.slice(raw.lastIndexOf("\n") + 1);
    if (opts.stopAfterFirst && text.length > 0) {
      ctrl.abort(); // the user pressed Stop
      break;
    }
  }
  return { turnId, sessionId: sid, answer: { role: "assistant", content: text } as ChatMessage, text };
}

const get = async (core: RunningCore, sid: string): Promise<SessionReply> => (await callApi(core, "GET", `/api/sessions/${sid}`)).body as SessionReply;

async function waitFor<T>(fn: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("conversations as a tree through the real chat route", () => {
  let core: RunningCore;
  let model: string;
  let dataDir: string;
  const sys: ChatMessage = { role: "system", content: "Be brief." };
  const q1: ChatMessage = { role: "user", content: "Tell me about otters" };
  const q2: ChatMessage = { role: "user", content: "Where do they sleep?" };
  let sid: string;
  const ids: Record<string, string> = {};

  before(async () => {
    model = await tinyModel({ arch: "qwen2" });
    dataDir = tempDir("clawrl-tree-api-");
    core = await start(dataDir, model);
    // No turn held back for the gate (which turns are is a hash of the turn id: a held-back
    // answer makes no sample, and the sample assertions below would fail at random), and no
    // run claiming the samples these tests look for. Both persist across the restart below.
    const set = await callApi(core, "PATCH", "/api/settings", { heldBackShare: 0, autoLearn: false });
    assert.equal(set.status, 200);
  });
  after(async () => {
    await core?.close();
  });

  it("regenerate → siblings of one question; a stopped answer is kept, marked, its question once; edit → a sibling with another question", async () => {
    const a = await ask(core, [sys, q1], null);
    sid = a.sessionId;
    await callApi(core, "PATCH", `/api/sessions/${sid}`, { title: "Otters" });
    const b = await ask(core, [sys, q1, a.answer, q2], sid);
    const b2 = await ask(core, [sys, q1, a.answer, q2], sid); // Regenerate
    const b3 = await ask(core, [sys, q1, a.answer, q2], sid, { stopAfterFirst: true, maxTokens: 400 }); // Regenerate, then Stop
    const stopped = await waitFor(async () => (await get(core, sid)).turns.find((t) => t.turnId === b3.turnId), "the stopped turn");
    assert.equal(stopped.stopped, true);
    assert.ok(stopped.text.startsWith(b3.text), `recorded ${JSON.stringify(stopped.text)}, the client had ${JSON.stringify(b3.text)}`);
    assert.equal(stopped.parentTurnId, a.turnId);
    const d = await ask(core, [sys, { role: "user", content: "Tell me about beavers" }], sid); // the first question edited
    Object.assign(ids, { a: a.turnId, b: b.turnId, b2: b2.turnId, b3: b3.turnId, d: d.turnId });

    const s = await get(core, sid);
    assert.deepEqual(
      s.turns.map((t) => [t.turnId, t.parentTurnId]),
      [
        [a.turnId, null],
        [b.turnId, a.turnId],
        [b2.turnId, a.turnId],
        [b3.turnId, a.turnId],
        [d.turnId, null],
      ],
    );
    assert.deepEqual(s.activePath, [d.turnId]);
    // The stopped answer is never trained on: rated down, it still makes no sample.
    await callApi(core, "POST", "/api/feedback", { turnId: b3.turnId, thumbs: "down" });
    await callApi(core, "POST", "/api/feedback", { turnId: b.turnId, thumbs: "down" });
    const samples = core.samples.ready().map((i) => i.id);
    assert.ok(samples.includes(b.turnId), "an ordinary answer rated down is a sample");
    assert.ok(!samples.includes(b3.turnId), "the stopped one is not");
  });

  it("switches the branch shown (an inner turn: its latest child); the choice survives a restart of the core", async () => {
    const put = await callApi(core, "PUT", `/api/sessions/${sid}/active`, { turnId: ids.a });
    assert.equal(put.status, 200);
    assert.deepEqual(put.body.activePath, [ids.a, ids.b3]);
    assert.deepEqual((await callApi(core, "PUT", `/api/sessions/${sid}/active`, { turnId: ids.b })).body.activePath, [ids.a, ids.b]);
    assert.equal((await callApi(core, "PUT", `/api/sessions/${sid}/active`, { turnId: "nope" })).status, 404);
    const bad = await callApi(core, "PUT", `/api/sessions/${sid}/active`, { turnId: ids.b, turn: 1 });
    assert.deepEqual([bad.status, bad.body.error.code], [400, "unsupported_parameter"]);
    await core.close();
    core = await start(dataDir, model);
    const s = await get(core, sid);
    assert.deepEqual(s.activePath, [ids.a, ids.b]);
    assert.equal(s.turns.length, 5);
    assert.equal(s.turns.find((t) => t.turnId === ids.b3)?.stopped, true);
  });

  it("searches titles and message text, case-insensitive, with a snippet", async () => {
    const byTitle = (await callApi(core, "GET", "/api/search?q=OTTERS")).body as SessionSearchReply;
    assert.deepEqual(
      byTitle.hits.map((h) => [h.sessionId, h.turnId]),
      [[sid, null]],
    );
    const byText = (await callApi(core, "GET", `/api/search?q=${encodeURIComponent("where do THEY")}`)).body as SessionSearchReply;
    assert.equal(byText.hits.length, 1);
    assert.equal(byText.hits[0].turnId, ids.b);
    assert.match(byText.hits[0].snippet, /Where do they sleep\?/);
    assert.deepEqual((await callApi(core, "GET", "/api/search?q=zebra-quagga")).body, { hits: [] });
    const empty = await callApi(core, "GET", "/api/search?q=%20");
    assert.deepEqual([empty.status, empty.body.error.param], [400, "q"]);
  });

  it("exports the tree as JSON and the branch shown as Markdown, with a file name", async () => {
    const json = await fetch(`${core.url}/api/sessions/${sid}/export?format=json`, { headers: { authorization: `Bearer ${core.token}` } });
    assert.equal(json.status, 200);
    assert.match(json.headers.get("content-disposition") ?? "", /attachment; filename="Otters\.json"/);
    const exp = (await json.json()) as SessionExport;
    assert.deepEqual([exp.format, exp.version, exp.session.id, exp.turns.length], ["clawrl.session", 1, sid, 5]);
    assert.deepEqual(exp.activePath, [ids.a, ids.b]);
    assert.equal(exp.turns.find((t) => t.turnId === ids.b)?.feedback?.thumbs, "down");
    assert.ok(exp.turns.every((t) => typeof t.adapter === "string"));

    const md = await fetch(`${core.url}/api/sessions/${sid}/export?format=md`, { headers: { authorization: `Bearer ${core.token}` } });
    assert.equal(md.status, 200);
    assert.match(md.headers.get("content-type") ?? "", /text\/markdown/);
    assert.match(md.headers.get("content-disposition") ?? "", /filename="Otters\.md"/);
    const text = await md.text();
    assert.match(text, /^# Otters\n/);
    assert.ok(text.indexOf("Tell me about otters") < text.indexOf("Where do they sleep?"));
    assert.ok(!text.includes("Tell me about beavers"), "only the branch shown");
    assert.ok(!text.includes("Be brief."), "no system prompt");
    assert.match(text, /_adapter base, model /);
    assert.equal((await callApi(core, "GET", `/api/sessions/nope/export?format=md`)).status, 404);
    assert.equal((await callApi(core, "GET", `/api/sessions/${sid}/export?format=pdf`)).status, 400);
  });

  it("deletes a message and its branch: 204, gone from the tree, the samples and a reopened core; 404 for an unknown turn", async () => {
    assert.ok(core.samples.ready().some((i) => i.id === ids.b));
    const del = await callApi(core, "DELETE", `/api/turns/${ids.b}`);
    assert.equal(del.status, 204);
    assert.equal((await callApi(core, "DELETE", `/api/turns/${ids.b}`)).status, 404);
    let s = await get(core, sid);
    assert.deepEqual(
      s.turns.map((t) => t.turnId),
      [ids.a, ids.b2, ids.b3, ids.d],
    );
    assert.equal(s.session.turnCount, 4);
    assert.ok(!core.samples.ready().some((i) => i.id === ids.b));
    // the chosen leaf is gone: the latest turn is shown
    assert.deepEqual(s.activePath, [ids.d]);
    assert.equal((await callApi(core, "DELETE", `/api/turns/${ids.a}`)).status, 204);
    await core.close();
    core = await start(dataDir, model);
    s = await get(core, sid);
    assert.deepEqual(
      s.turns.map((t) => t.turnId),
      [ids.d],
    );
    assert.deepEqual(s.activePath, [ids.d]);
  });
});
