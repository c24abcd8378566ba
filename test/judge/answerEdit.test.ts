/**
 * Issue 30 end to end on a real core (tiny model, a scripted judge endpoint): a main turn answered
 * through /v1, then rewritten by the user through POST /api/turns/:id/answer-edit. The original gets
 * the correction as its next state and the judge reads it (its votes only: the edit is the hint, so
 * no hint extraction runs); the edit's thumbs down overrules the judge's vote; the edit's own
 * sample is in the pool; the turn view shows the edit.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { EDIT_SAMPLE_SUFFIX } from "../../electron/core/rollout/samples.js";
import { answerEditHint } from "../../models/samples/answerEdit.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { scriptedJudge } from "./fixtures.js";

let core: RunningCore;
let judgeEp: Awaited<ReturnType<typeof scriptedJudge>>;

const api = async (path: string, init: RequestInit = {}) => {
  const r = await fetch(`${core.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${core.token}`, ...(init.body ? { "content-type": "application/json" } : {}) },
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

before(async () => {
  judgeEp = await scriptedJudge((kind) => (kind === "prm" ? "The user corrected it. \\boxed{1}" : "\\boxed{-1}"));
  core = await startCore({
    model: await tinyModel({ arch: "qwen2" }),
    dataDir: tempDir("clawrl-answer-edit-e2e-"),
    token: "test-token-123",
    uiDir: "",
    engine: { maxContextSize: 1024, sequences: 2, threads: 1, backend: "cpu" },
    training: false,
  });
  const s = await api("/api/settings", {
    method: "PATCH",
    body: JSON.stringify({ judgeSource: { kind: "endpoint", baseUrl: judgeEp.baseUrl, model: "scripted" }, heldBackShare: 0 }),
  });
  assert.equal(s.status, 200, JSON.stringify(s.body));
});

after(async () => {
  await core?.close();
  await judgeEp?.close();
});

test("an edited answer: the judge reads the correction, the edit overrules its vote, and the edit is a sample", async () => {
  const client = new OpenAI({ baseURL: `${core.url}/v1`, apiKey: core.token, maxRetries: 0, timeout: 120_000 });
  const { response } = await client.chat.completions
    .create(
      { model: core.engine!.modelId, messages: [{ role: "user", content: "What is 2+2?" }], max_completion_tokens: 6, seed: 5 },
      { headers: { "X-Turn-Type": "main" } },
    )
    .withResponse();
  const turnId = response.headers.get("x-clawrl-turn-id")!;
  const judged = new Promise<void>((resolve) => {
    const off = core.bus.on("judge", (p) => (p.turnId === turnId ? (off(), resolve()) : undefined));
  });
  const edit = "2 + 2 = 4.";
  const r = await api(`/api/turns/${turnId}/answer-edit`, { method: "POST", body: JSON.stringify({ text: edit }) });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.nextState, true);
  await judged;
  await core.judge.whenIdle();

  // The judge read the correction as the next state; no hint extraction (the edit is the hint).
  assert.equal(judgeEp.requests.filter((q) => q.kind === "hint").length, 0);
  const prompt = judgeEp.requests.find((q) => q.kind === "prm")!.body.messages[1].content as string;
  assert.match(prompt, /This is what you should have said:\s+2 \+ 2 = 4\./);
  assert.equal(core.store.turnEntry(turnId)!.judge?.reward, 1);

  // The edit overrules the judge's +1: the original is a thumbs down with the edit as its hint; the edit's own sample targets its text.
  const original = core.samples.get(turnId)!;
  assert.deepEqual([original.reward, original.rewardSource, original.hints], [-1, "edit", [answerEditHint(edit)]]);
  const own = core.samples.get(turnId + EDIT_SAMPLE_SUFFIX)!;
  assert.deepEqual([own.sample.response, own.sample.reward, own.sample.prompt_tokens], [edit, 1, core.store.readTurn(turnId).promptTokens]);

  // The chat reads the edit on the turn.
  const session = await api(`/api/sessions/${core.store.turnEntry(turnId)!.sessionId}`);
  const turns = session.body.turns as Array<{ turnId: string; answerEdit?: { text: string } }>;
  assert.equal(turns.find((t) => t.turnId === turnId)?.answerEdit?.text, edit);
});
