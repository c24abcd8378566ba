import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import type { JudgeRecord } from "../../electron/core/store/records.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { scriptedJudge } from "./fixtures.js";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** End to end: chat through /v1 (no explicit feedback) → the judge reads the next message → votes in the log → a sample iff ±1. */
describe("judge and samples end to end through /v1/chat/completions", () => {
  let core: RunningCore;
  let client: OpenAI;
  let judgeEp: Awaited<ReturnType<typeof scriptedJudge>>;
  let prmScript: string[] = [];
  const api = async (path: string, init: RequestInit = {}) => {
    const r = await fetch(`${core.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${core.token}`, ...(init.body ? { "content-type": "application/json" } : {}) },
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response bodies structurally; `any` keeps the assertions readable
    const body: any = await r.json();
    return { status: r.status, body };
  };

  before(async () => {
    judgeEp = await scriptedJudge((kind, i) => (kind === "prm" ? prmScript[i % prmScript.length] : "Nothing to learn here. \\boxed{-1}"));
    core = await startCore({
      model: await tinyModel({ arch: "qwen2" }),
      dataDir: tempDir("clawrl-judge-e2e-"),
      token: "test-token-123",
      uiDir: "",
      engine: { maxContextSize: 1024, sequences: 2, threads: 1, backend: "cpu" },
      training: false,
    });
    client = new OpenAI({ baseURL: `${core.url}/v1`, apiKey: core.token, maxRetries: 0, timeout: 120_000 });
    // No held-back slice: these sessions have random ids, and the tests count the samples they make.
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

  async function turn(messages: Msg[]) {
    const { data, response } = await client.chat.completions
      .create({ model: core.engine!.modelId, messages, max_completion_tokens: 6, seed: 5 })
      .withResponse();
    return {
      answer: { role: "assistant", content: data.choices[0].message.content ?? "" } as Msg,
      turnId: response.headers.get("x-clawrl-turn-id")!,
      sessionId: response.headers.get("x-clawrl-session-id")!,
    };
  }

  /** Two user turns in one session; resolves when the first one is judged. */
  async function conversation(first: string, second: string) {
    const judged = new Promise<{ turnId: string; reward: number }>((resolve) => {
      const off = core.bus.on("judge", (p) => {
        off();
        resolve(p);
      });
    });
    const u1: Msg = { role: "user", content: first };
    const t1 = await turn([u1]);
    assert.equal(core.store.turnEntry(t1.turnId)!.judge, null);
    const t2 = await turn([u1, t1.answer, { role: "user", content: second }]);
    assert.equal(t2.sessionId, t1.sessionId);
    const j = await judged;
    assert.equal(j.turnId, t1.turnId);
    await core.judge.whenIdle();
    return { t1, t2, reward: j.reward };
  }

  function judgeLines(): JudgeRecord[] {
    return fs
      .readFileSync(core.paths.trajectories, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((r) => r.kind === "judge");
  }

  it("a correction: the first turn is judged -1 from the second message, its votes are logged, and it becomes an RL sample", async () => {
    prmScript = ["The user says it was wrong. \\boxed{-1}", "Correction. \\boxed{-1}", "Looks fine \\boxed{1}"];
    const { t1, t2, reward } = await conversation("What is 2+2?", "No, that's wrong. Try again.");
    assert.equal(reward, -1);
    const line = judgeLines().find((l) => l.turnId === t1.turnId)!;
    assert.deepEqual(
      line.votes.map((v) => [v.score, v.text]),
      prmScript.map((t, i) => [[-1, -1, 1][i], t]),
    );
    assert.equal(line.hintVotes!.length, 3);
    assert.equal(line.judge, `endpoint:scripted@${judgeEp.baseUrl}`);
    // The judge saw the answer and the next state.
    const prompt = judgeEp.requests[0].body.messages[1].content as string;
    assert.match(prompt, /No, that's wrong\. Try again\./);
    assert.match(prompt, /What is 2\+2\?/);
    // The second turn has no next state yet: not judged.
    assert.equal(
      judgeLines().some((l) => l.turnId === t2.turnId),
      false,
    );

    const item = core.samples.get(t1.turnId)!;
    assert.ok(item, "no sample for the judged turn");
    const served = core.store.readTurn(t1.turnId);
    assert.deepEqual([item.reward, item.rewardSource, item.hints], [-1, "judge", []]);
    assert.deepEqual(
      [item.sample.prompt_tokens, item.sample.response_tokens, item.sample.logprobs],
      [served.promptTokens, served.responseTokens, served.tokenLogprobs],
    );
    assert.equal(item.adapter, "base");
    const detail = await api(`/api/sessions/${t1.sessionId}`);
    assert.deepEqual([detail.body.turns[0].reward, detail.body.turns[0].rewardSource, detail.body.turns[0].judge.votes.length], [-1, "judge", 3]);
    const status = await api("/api/status");
    assert.equal(status.body.training.judgeQueue, 0);

    // Explicit thumbs override the judge: the sample's reward follows.
    const fb = await api("/api/feedback", { method: "POST", body: JSON.stringify({ turnId: t1.turnId, thumbs: "up" }) });
    assert.equal(fb.status, 200);
    assert.deepEqual([fb.body.reward, fb.body.rewardSource], [1, "thumbs"]);
    assert.deepEqual([core.samples.get(t1.turnId)!.reward, core.samples.get(t1.turnId)!.rewardSource], [1, "thumbs"]);
  });

  it("a tie (1, -1, invalid) gives 0: votes logged, no sample", async () => {
    prmScript = ["\\boxed{1}", "\\boxed{-1}", "no verdict"];
    const before = core.samples.readyCount;
    const { t1, reward } = await conversation("Tell me a story.", "Thanks, now tell me another one.");
    assert.equal(reward, 0);
    const line = judgeLines().find((l) => l.turnId === t1.turnId)!;
    assert.deepEqual(
      line.votes.map((v) => v.score),
      [1, -1, null],
    );
    assert.equal(core.samples.get(t1.turnId), undefined);
    assert.equal(core.samples.readyCount, before);
    // Thumbs down on it now makes it a sample.
    await api("/api/feedback", { method: "POST", body: JSON.stringify({ turnId: t1.turnId, thumbs: "down" }) });
    assert.equal(core.samples.get(t1.turnId)!.reward, -1);
    assert.equal(core.samples.readyCount, before + 1);
  });

  it("at least one sample per session: a finished session whose turns all scored 0 trains its best-judged turn, with a weak reward", async () => {
    prmScript = ["\\boxed{0}", "\\boxed{1}", "\\boxed{0}"]; // majority 0, mean vote +1/3
    const { t1, t2 } = await conversation("Tell me about owls.", "Go on.");
    assert.equal(core.samples.get(t1.turnId), undefined, "a 0 makes no sample while the session goes on");
    // The user ends the session (X-Session-Done): the second turn gets its next state and is judged 0 too.
    const judged = new Promise<void>((resolve) => {
      const off = core.bus.on("judge", (p) => {
        if (p.turnId !== t2.turnId) return;
        off();
        resolve();
      });
    });
    const res = await fetch(`${core.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${core.token}`,
        "content-type": "application/json",
        "x-session-id": t1.sessionId,
        "x-turn-type": "main",
        "x-session-done": "1",
      },
      body: JSON.stringify({
        model: core.engine!.modelId,
        messages: [
          { role: "user", content: "Tell me about owls." },
          t1.answer,
          { role: "user", content: "Go on." },
          t2.answer,
          { role: "user", content: "Thanks, bye." },
        ],
        max_tokens: 6,
        seed: 5,
      }),
    });
    assert.equal(res.status, 200);
    await res.text();
    await judged;
    await core.judge.whenIdle();
    assert.equal((await api(`/api/sessions/${t1.sessionId}`)).body.session.closed, true);
    // Both judged turns have the same mean vote: the latest wins. Its reward: (1 + 1/3) / 4.
    const item = core.samples.get(t2.turnId)!;
    assert.ok(item, "the session's promoted turn is a sample");
    assert.deepEqual([item.reward, item.rewardSource, item.hints], [(1 + 1 / 3) / 4, "atLeastOne", []]);
    assert.equal(item.sample.reward, (1 + 1 / 3) / 4);
    assert.equal(core.samples.get(t1.turnId), undefined, "one sample per session");
  });

  it("a turn with thumbs before its next state arrives is not judged", async () => {
    prmScript = ["\\boxed{1}"];
    const u1: Msg = { role: "user", content: "Name a colour." };
    const t1 = await turn([u1]);
    await api("/api/feedback", { method: "POST", body: JSON.stringify({ turnId: t1.turnId, thumbs: "up" }) });
    const n = judgeEp.requests.length;
    await turn([u1, t1.answer, { role: "user", content: "Another one?" }]);
    // A later conversation that is judged: the queue is FIFO, so the thumbed turn's chance came before.
    await conversation("Name a fruit.", "And a vegetable?");
    assert.equal(judgeEp.requests.length, n + 6);
    assert.ok(judgeEp.requests.slice(n).every((r) => (r.body.messages[1].content as string).includes("Name a fruit.")));
    assert.equal(
      judgeLines().some((l) => l.turnId === t1.turnId),
      false,
    );
    assert.equal(core.samples.get(t1.turnId)!.reward, 1);
  });
});
