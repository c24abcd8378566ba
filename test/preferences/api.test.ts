import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

/** Issue 20's first Done-when, through the API only, on a real core serving the tiny qwen2 model. */
describe("preferences through the API", () => {
  let core: RunningCore;
  const api = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);
  let n = 0;

  before(async () => {
    core = await startCore({
      model: await tinyModel({ arch: "qwen2" }),
      dataDir: tempDir("clawrl-prefs-"),
      token: "pref-token",
      uiDir: "",
      engine: { maxContextSize: 1024, sequences: 2, threads: 1, backend: "cpu" },
      training: false,
    });
  });
  after(async () => {
    await core?.close();
  });

  /** A main turn as an outside client sends it (its own system prompt, a session id); returns the recorded turn with tokens. */
  async function mainTurn(content: string, extra: Record<string, string> = {}) {
    const res = await fetch(`${core.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json", "x-session-id": `pref-s-${++n}`, "x-turn-type": "main", ...extra },
      body: JSON.stringify({
        messages: [
          { role: "system", content: "You are terse." },
          { role: "user", content },
        ],
        max_tokens: 4,
        seed: 1,
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.json();
    const turnId = res.headers.get("x-clawrl-turn-id")!;
    const session = await api("GET", `/api/sessions/pref-s-${n}?tokens=1`);
    const turn = session.body.turns.find((t: { turnId: string }) => t.turnId === turnId);
    const served = core.engine!.model.detokenize(turn.promptTokens, true);
    return { turnId, turn, served };
  }

  it("a thumbs-down with a hint is an active preference; the next main turn is served with it in its system prompt and records it apart; disabling takes it out", async () => {
    const events = await fetch(`${core.url}/api/events?token=${core.token}`);
    const first = await mainTurn("Tell me about otters.");
    assert.equal(first.turn.preferences, undefined);
    const hint = "Always answer in French.";
    assert.equal((await api("POST", "/api/feedback", { turnId: first.turnId, thumbs: "down", hint })).status, 200);

    const list = await api("GET", "/api/preferences");
    assert.equal(list.status, 200);
    assert.equal(list.body.preferences.length, 1);
    const p = list.body.preferences[0];
    assert.deepEqual([p.text, p.source, p.status, p.turnIds], [hint, "user", "active", [first.turnId]]);
    assert.ok(typeof p.id === "string" && typeof p.createdAt === "string");
    assert.ok(p.contextTokens > 0, "the context a preference costs is shown");
    assert.ok(list.body.block.text.includes(hint));

    const second = await mainTurn("And about beavers?");
    // Recorded: the client's messages as sent, the block apart, the served prompt with it in the system message.
    assert.deepEqual(second.turn.messages, [
      { role: "system", content: "You are terse." },
      { role: "user", content: "And about beavers?" },
    ]);
    assert.deepEqual(second.turn.preferences.ids, [p.id]);
    assert.equal(second.turn.preferences.placement, "system");
    assert.ok(second.turn.preferences.block.includes(hint));
    assert.match(second.served, /<\|im_start\|>system\nYou are terse\.\n\nThe user's standing preferences[^]*Always answer in French\.<\|im_end\|>/);
    assert.ok(second.turn.clientPromptTokens.length < second.turn.promptTokens.length);
    assert.doesNotMatch(core.engine!.model.detokenize(second.turn.clientPromptTokens, true), /French/);

    const off = await api("PATCH", `/api/preferences/${p.id}`, { status: "disabled" });
    assert.equal(off.status, 200);
    assert.equal(off.body.preference.status, "disabled");
    const third = await mainTurn("And about seals?");
    assert.equal(third.turn.preferences, undefined);
    assert.doesNotMatch(third.served, /French/);

    // Every change went out over SSE.
    const reader = events.body!.getReader();
    let text = "";
    while (!/"status":"disabled"/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    assert.match(text, /event: preferences\ndata: \{"id":"[^"]+","change":"created"/);
    await reader.cancel();
  });

  it("create, edit, undo, delete and restore; side turns and (by setting) outside clients get no block", async () => {
    const created = await api("POST", "/api/preferences", { text: "Use metric units." });
    assert.equal(created.status, 201);
    const id = created.body.preference.id;
    assert.equal(created.body.preference.source, "manual");
    assert.equal((await api("POST", "/api/preferences", { text: "" })).status, 400);
    assert.equal((await api("PATCH", `/api/preferences/${id}`, { bogus: 1 })).status, 400);
    assert.equal((await api("PATCH", "/api/preferences/nope", { status: "active" })).status, 404);

    const edited = await api("PATCH", `/api/preferences/${id}`, { text: "Use metric units only." });
    assert.equal(edited.body.preference.text, "Use metric units only.");
    const undone = await api("POST", `/api/preferences/${id}/undo`);
    assert.equal(undone.body.preference.text, "Use metric units.");
    assert.deepEqual(
      undone.body.preference.history.map((h: { kind: string }) => h.kind),
      ["created", "text", "text"],
    );

    const side = await mainTurn("What is 2+2?", { "x-turn-type": "side" });
    assert.equal(side.turn.preferences, undefined);
    const main = await mainTurn("What is 3+3?");
    assert.ok(main.turn.preferences.block.includes("Use metric units."));

    assert.equal((await api("PATCH", "/api/settings", { preferencesForOutsideClients: false })).status, 200);
    const outside = await mainTurn("What is 4+4?");
    assert.equal(outside.turn.preferences, undefined);
    const ui = await mainTurn("What is 5+5?", { "x-clawrl-client": "ui" });
    assert.ok(ui.turn.preferences.block.includes("Use metric units."));
    await api("PATCH", "/api/settings", { preferencesForOutsideClients: true });

    // A judge's hint the user accepts: source "judge", with its turn.
    core.store.appendJudge({ turnId: main.turnId, reward: 0, votes: [], hints: ["Use bullet points."], representative: null, judge: "test" });
    const accepted = await api("POST", "/api/preferences", { text: "Use bullet points.", turnId: main.turnId });
    assert.deepEqual([accepted.status, accepted.body.preference.source, accepted.body.preference.turnIds], [201, "judge", [main.turnId]]);
    assert.equal((await api("POST", "/api/preferences", { text: "x", turnId: "no-such-turn" })).status, 404);
    assert.equal((await api("DELETE", `/api/preferences/${accepted.body.preference.id}`)).status, 204);

    assert.equal((await api("DELETE", `/api/preferences/${id}`)).status, 204);
    let list = await api("GET", "/api/preferences");
    assert.ok(!list.body.preferences.some((p: { id: string }) => p.id === id));
    assert.ok(list.body.deleted.some((p: { id: string }) => p.id === id));
    assert.equal((await api("POST", `/api/preferences/${id}/restore`)).status, 200);
    list = await api("GET", "/api/preferences");
    assert.ok(list.body.preferences.some((p: { id: string }) => p.id === id));
  });

  it("the block stays within its token budget, newest first; preferences survive a restart of the store", async () => {
    for (let i = 0; i < 12; i++) await api("POST", "/api/preferences", { text: `Rule number ${i}: mention the number ${i} somewhere in the answer.` });
    await api("PATCH", "/api/settings", { preferenceTokenBudget: 96 });
    const list = await api("GET", "/api/preferences");
    assert.ok(list.body.block.tokens <= 96, `block has ${list.body.block.tokens} tokens`);
    assert.ok(list.body.block.text.includes("Rule number 11"), JSON.stringify(list.body.block));
    assert.ok(!list.body.block.text.includes("Rule number 0:"));
    assert.ok(list.body.preferences.some((p: { overBudget: boolean }) => p.overBudget));
    const turn = await mainTurn("Hi");
    assert.ok(turn.turn.preferences.tokens <= 96);
    await api("PATCH", "/api/settings", { preferenceTokenBudget: 256 });
    // state.json holds them (atomic lowdb writes like the other state).
    const { openState } = await import("../../electron/core/store/state.js");
    const db = openState(core.paths.state, true);
    assert.ok(db.data.preferences.length >= 13);
  });
});
