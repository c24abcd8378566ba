import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { RECENT_JUDGED } from "../../electron/core/server/routes/training.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { scriptedJudge } from "../judge/fixtures.js";
import { api, feedback, waitFor } from "./helpers.js";

interface JudgedView {
  turnId: string;
  text: string;
  time: string;
  feedback: { thumbs: string | null; hint: string | null } | null;
  judge: { reward: number; votes: { score: number | null; text: string }[]; hints: string[] } | null;
  reward: number | null;
}

/**
 * GET /api/training, what the Training page shows, from a real core: the live status with the
 * judge queue, and the latest judged turns (real judge votes from a scripted judge endpoint,
 * real thumbs and hints) newest first with their votes, hints and rewards.
 */
describe("GET /api/training: judge queue and the latest judged turns", () => {
  let core: RunningCore;
  let judgeEp: Awaited<ReturnType<typeof scriptedJudge>>;

  before(async () => {
    judgeEp = await scriptedJudge((kind) => (kind === "prm" ? "The user was pleased. \\boxed{1}" : "Say hello back. \\boxed{1}"));
    core = await startCore({
      model: await tinyModel({ arch: "qwen2" }),
      dataDir: tempDir("clawrl-training-detail-"),
      token: "detail-token",
      uiDir: "",
      engine: { maxContextSize: 512, sequences: 2, threads: 1, backend: "cpu" },
      training: { worker: { niceness: 5 } },
    });
    // Nothing trains here (this test is about what the page reads, not the loop).
    const s = await api(core, "PATCH", "/api/settings", { autoLearn: false, judgeSource: { kind: "endpoint", baseUrl: judgeEp.baseUrl, model: "scripted" } });
    assert.equal(s.status, 200, JSON.stringify(s.json));
  });
  after(async () => {
    await core?.close();
    await judgeEp?.close();
  });

  async function turn(messages: { role: string; content: string }[]): Promise<{ turnId: string; text: string }> {
    const res = await fetch(`${core.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json", "x-turn-type": "main" },
      body: JSON.stringify({ model: "tiny", messages, max_tokens: 6, seed: 3 }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    return { turnId: res.headers.get("x-clawrl-turn-id")!, text: body.choices[0].message.content };
  }

  it("lists nothing and a zero judge queue before any verdict", async () => {
    const r = await api(core, "GET", "/api/training");
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.recentJudged, []);
    assert.equal(r.json.training.judgeQueue, 0);
    assert.equal(typeof r.json.training.state, "string");
    assert.deepEqual(r.json.history, []);
  });

  it("lists judged, thumbed and hinted turns newest first with votes and hints; unjudged turns stay out", async () => {
    // A conversation of two turns: the user's second message judges the first (judge votes).
    const u1 = { role: "user", content: "Hello" };
    const t1 = await turn([u1]);
    await turn([u1, { role: "assistant", content: t1.text }, { role: "user", content: "Thanks, that was nice." }]);
    await waitFor("the judge's verdict on the first turn", () => core.store.turnEntry(t1.turnId)?.judge ?? undefined);
    await core.judge.whenIdle();
    // Explicit feedback on two more turns; one turn gets nothing.
    const t3 = await turn([{ role: "user", content: "Tell me a story" }]);
    const t4 = await turn([{ role: "user", content: "What is a cat" }]);
    await turn([{ role: "user", content: "Unrated question" }]);
    await feedback(core, t3.turnId, "down", "Keep it short.");
    const hinted = await api(core, "POST", "/api/feedback", { turnId: t4.turnId, hint: "Mention that cats purr." });
    assert.equal(hinted.status, 200, JSON.stringify(hinted.json));

    const r = await api(core, "GET", "/api/training");
    const list = r.json.recentJudged as JudgedView[];
    assert.deepEqual(
      list.map((t) => t.turnId),
      [t4.turnId, t3.turnId, t1.turnId],
      "newest first; the unrated turns (t2 has no next message yet, the last had no feedback) are not listed",
    );
    const [v4, v3, v1] = list;
    assert.equal(v4.feedback?.hint, "Mention that cats purr.");
    assert.equal(v4.feedback?.thumbs, null);
    assert.equal(v3.feedback?.thumbs, "down");
    assert.equal(v3.reward, -1);
    assert.equal(v1.text, t1.text);
    assert.equal(v1.judge?.reward, 1);
    assert.deepEqual(
      v1.judge?.votes.map((v) => v.score),
      [1, 1, 1],
      "three votes (the default judgeVotes), each the scripted +1",
    );
    assert.equal(v1.reward, 1);
    assert.ok(!Number.isNaN(Date.parse(v1.time)));
    assert.equal(r.json.training.judgeQueue, 0, "the judge is idle");
    assert.ok(!("promptTokens" in v1), "no token arrays in the list");
  });

  it(`keeps only the newest ${RECENT_JUDGED}`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < RECENT_JUDGED + 2; i++) {
      const t = await turn([{ role: "user", content: `question ${i}` }]);
      await feedback(core, t.turnId, i % 2 ? "up" : "down");
      ids.push(t.turnId);
    }
    const list = (await api(core, "GET", "/api/training")).json.recentJudged as JudgedView[];
    assert.equal(list.length, RECENT_JUDGED);
    assert.deepEqual(
      list.map((t) => t.turnId),
      ids.slice(-RECENT_JUDGED).reverse(),
    );
  });
});
