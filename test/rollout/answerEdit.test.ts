/**
 * Issue 30, "every edit teaches": an assistant answer the user rewrote (POST /api/turns/:id/answer-edit)
 * is recorded, gives the original its correction as next state, and makes the samples method.md
 * describes (the edit's own, the edit's tokens the target; the original's, a thumbs down with the
 * edit as hint); the export shows the edit's sample. A stopped answer never makes a sample.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { createServer } from "../../electron/core/server/app.js";
import { registerAnswerEditRoute } from "../../electron/core/server/routes/answerEdit.js";
import { EDIT_SAMPLE_SUFFIX, TurnSamplePool, sampleById } from "../../electron/core/rollout/samples.js";
import { Store } from "../../electron/core/store/store.js";
import type { TurnRecord } from "../../electron/core/store/records.js";
import { answerEditHint } from "../../models/samples/answerEdit.js";
import { parseSample } from "../../models/samples/sample.js";
import { isHeldBack } from "../../electron/core/rollout/heldBack.js";
import { runCli } from "../helpers/cli.js";
import { addTurn, tempStore as judgeStore } from "../judge/fixtures.js";

const TOKEN = "t".repeat(24);

function setup() {
  const t = judgeStore();
  t.store.updateSettings({ heldBackShare: 0 });
  const app = createServer({ token: TOKEN });
  registerAnswerEditRoute(app, { store: t.store, bus: t.bus });
  const post = (turnId: string, body: unknown) =>
    app.inject({
      method: "POST",
      url: `/api/turns/${turnId}/answer-edit`,
      headers: { authorization: `Bearer ${TOKEN}`, host: "127.0.0.1:1" },
      payload: body as object,
    });
  return { ...t, app, post };
}

const EDIT = "About 384,400 km on average.";

describe("answer edits", () => {
  it("the route records the edit, answers 4xx for an unknown turn, an empty or unchanged text and a side turn", async () => {
    const { store, bus, post } = setup();
    const main = addTurn(store);
    const side = addTurn(store, { type: "side" });
    const events: string[] = [];
    bus.on("answerEdit", (p) => events.push(`edit ${p.turnId}`));
    bus.on("turnReady", (p) => events.push(`ready ${p.turnId}`));

    const unknown = await post("nope", { text: EDIT });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().error.code, "not_found");
    for (const [body, code] of [
      [{ text: "   \n" }, "invalid_value"],
      [{}, "invalid_value"],
      [{ text: EDIT, extra: 1 }, "unsupported_parameter"],
      [{ text: "About 384,400 miles." }, "unchanged"],
    ] as const) {
      const r = await post(main, body);
      assert.equal(r.statusCode, 400, JSON.stringify(body));
      assert.equal(r.json().error.code, code);
    }
    assert.equal((await post(side, { text: EDIT })).statusCode, 400);
    assert.deepEqual(events, []);

    const ok = await post(main, { text: EDIT });
    assert.equal(ok.statusCode, 200, ok.body);
    const reply = ok.json();
    assert.deepEqual([reply.turnId, reply.answerEdit.text, reply.nextState], [main, EDIT, true]);
    assert.deepEqual(events, [`edit ${main}`, `ready ${main}`]);
    // The original answer has the correction as its next state (the judge reads it); the turn view shows the edit.
    assert.match(JSON.stringify(store.readNextState(main)), /what you should have said:\\n\\nAbout 384,400 km on average\./);
    assert.equal(store.turnView(main).answerEdit?.text, EDIT);
    // A second edit replaces the first and survives a reopen; the next state stays the first pairing.
    const again = await post(main, { text: `${EDIT} It varies.` });
    assert.equal(again.json().nextState, false);
    store.close();
    const reopened = Store.open(store.dataDir, { durable: false });
    assert.equal(reopened.turnView(main).answerEdit?.text, `${EDIT} It varies.`);
    assert.doesNotMatch(JSON.stringify(reopened.readNextState(main)), /It varies/);
    reopened.close();
  });

  it("makes the edit's sample (its tokens the target, +1, the edit as the teacher's hint) and the original's (−1 with the edit as hint; thumbs win)", async () => {
    const { store, bus, post } = setup();
    const pool = new TurnSamplePool(store, bus);
    const messages = [
      { role: "system" as const, content: "Be brief." },
      { role: "user" as const, content: "How far is the moon?" },
    ];
    const a = addTurn(store, { messages, promptTokens: [5, 6, 7, 8] });
    const b = addTurn(store, { messages });
    assert.equal(pool.readyCount, 0);
    assert.equal((await post(a, { text: EDIT })).statusCode, 200);
    assert.equal((await post(b, { text: EDIT })).statusCode, 200);
    const fb = store.appendFeedback(b, { thumbs: "up" });
    bus.emit("feedback", { turnId: b, sessionId: store.turnEntry(b)!.sessionId, feedback: fb });

    const edit = pool.get(a + EDIT_SAMPLE_SUFFIX);
    assert.ok(edit, "the edit makes a sample");
    assert.equal(edit.sample.response_tokens, undefined, "never served: the trainer tokenizes the edit");
    assert.equal(edit.sample.logprobs, undefined);
    assert.deepEqual(edit.sample, {
      prompt_tokens: [5, 6, 7, 8],
      response: EDIT,
      reward: 1,
      hint: answerEditHint(EDIT),
      messages,
    });
    assert.deepEqual([edit.rewardSource, edit.hintSource], ["edit", "edit"]);
    // A valid trainer sample: the exact served prompt, the edit's text to be tokenized by the trainer.
    assert.doesNotThrow(() => parseSample(edit.sample, 1));

    const original = pool.get(a)!;
    assert.deepEqual([original.reward, original.rewardSource, original.hints, original.hintSource], [-1, "edit", [answerEditHint(EDIT)], "edit"]);
    assert.deepEqual(original.sample.response_tokens, [7, 8, 9], "the original's own tokens");
    // The user's thumbs up wins over the edit's thumbs down; the edit still trains.
    assert.deepEqual([pool.get(b)!.reward, pool.get(b)!.rewardSource], [1, "thumbs"]);
    assert.ok(pool.get(b + EDIT_SAMPLE_SUFFIX));
    assert.equal(pool.readyCount, 4);

    // Claimed and committed like any sample; the eval's replay export finds it by id.
    assert.deepEqual(sampleById(store, a + EDIT_SAMPLE_SUFFIX), edit.sample);
    pool.claim([a + EDIT_SAMPLE_SUFFIX], "r1");
    pool.commit("r1");
    assert.equal(pool.get(a + EDIT_SAMPLE_SUFFIX), undefined);
    assert.ok(pool.get(a), "the original's sample is a sample of its own");
    assert.equal(new TurnSamplePool(store, null).get(a + EDIT_SAMPLE_SUFFIX), undefined, "trained once, also after a restart");

    // clawrl export --format jsonl (the CLI, reading the data dir while the store is open): the edit and its sample are on the turn's line.
    const out = path.join(store.dataDir, "export.jsonl");
    const cli = runCli(["export", "--format", "jsonl", "--out", out, "--data-dir", store.dataDir]);
    assert.equal(cli.code, 0, cli.stderr);
    const lines = fs
      .readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { turnId: string; answerEdit: { text: string; sample: unknown } | null });
    const line = lines.find((l) => l.turnId === a)!;
    assert.equal(line.answerEdit?.text, EDIT);
    assert.deepEqual(line.answerEdit?.sample, edit.sample);
    pool.close();
  });

  it("a held-back turn's edit makes no sample; a stopped answer never trains, whatever its feedback, but its edit does", async () => {
    const { store, bus, post } = setup();
    store.updateSettings({ heldBackShare: 0.5 });
    let held = addTurn(store);
    while (!isHeldBack(store.turnEntry(held)!, 0.5)) held = addTurn(store);
    const free = addTurn(store, { sessionId: store.turnEntry(held)!.sessionId });
    for (const id of [held, free]) assert.equal((await post(id, { text: EDIT })).statusCode, 200);
    const split = new TurnSamplePool(store, null);
    assert.equal(split.get(held + EDIT_SAMPLE_SUFFIX), undefined);
    assert.equal(split.get(free + EDIT_SAMPLE_SUFFIX) !== undefined, !isHeldBack(store.turnEntry(free)!, 0.5));
    store.updateSettings({ heldBackShare: 0 });

    // A stopped answer as the rollout records it: the text the client had received, marked.
    const sessionId = "stopped-session";
    const time = new Date().toISOString();
    const rec: Omit<TurnRecord, "kind" | "v"> & { stopped: true } = {
      turnId: "stopped-turn",
      sessionId,
      index: 0,
      type: "main",
      startedAt: time,
      time,
      fromUi: true,
      model: "tiny",
      adapter: "base",
      messages: [{ role: "user", content: "Tell me a long story." }],
      promptTokens: [1, 2, 3],
      responseTokens: [4, 5],
      tokenLogprobs: [-1, -1],
      text: "Once upon",
      finishReason: "stop",
      sampling: { temperature: 1, topP: 1 },
      sessionDone: false,
      prefixKey: "stopped-key",
      stopped: true,
    };
    store.appendTurn(rec);
    const pool = new TurnSamplePool(store, bus);
    for (const thumbs of ["up", "down"] as const) {
      const fb = store.appendFeedback(rec.turnId, { thumbs, hint: "Shorter." });
      bus.emit("feedback", { turnId: rec.turnId, sessionId, feedback: fb });
      assert.equal(pool.get(rec.turnId), undefined, `stopped + thumbs ${thumbs}: no sample`);
    }
    assert.equal((await post(rec.turnId, { text: "Once upon a time, a cat. The end." })).statusCode, 200);
    assert.equal(pool.get(rec.turnId), undefined, "the stopped answer itself still never trains");
    assert.equal(pool.get(rec.turnId + EDIT_SAMPLE_SUFFIX)?.sample.response, "Once upon a time, a cat. The end.");
    pool.close();
  });
});
