import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { EventBus } from "../../electron/core/rollout/events.js";
import { Rollout, type TurnOrigin } from "../../electron/core/rollout/rollout.js";
import { Store } from "../../electron/core/store/store.js";
import { runCli, tempDir } from "../helpers/cli.js";
import { result } from "../rollout/fixtures.js";

const o = (sessionId: string, messages: TurnOrigin["messages"]): TurnOrigin => ({
  headers: { "x-session-id": sessionId, "x-turn-type": "main" },
  bodyFields: {},
  fromUi: true,
  messages,
});

describe("clawrl export", () => {
  it("writes every live turn with next state, feedback, votes, reward and hints as JSONL", () => {
    const dir = tempDir();
    const store = Store.open(dir, { durable: false });
    const rollout = new Rollout({ store, bus: new EventBus() });
    const a1 = rollout.beginTurn(o("A", [{ role: "user", content: "2+2?" }]));
    rollout.completeTurn(a1, result("5", { adapter: "v1", tokenLogprobs: [-0.75] }));
    const a2 = rollout.beginTurn(
      o("A", [
        { role: "user", content: "2+2?" },
        { role: "assistant", content: "5" },
        { role: "user", content: "No, try again." },
      ]),
    );
    rollout.completeTurn(a2, result("4"));
    store.appendFeedback(a1.turnId, { thumbs: "up" });
    store.appendFeedback(a1.turnId, { thumbs: "down", hint: "Add correctly." });
    store.appendJudge({
      turnId: a1.turnId,
      reward: -1,
      votes: [
        { score: -1, text: "correction \\boxed{-1}" },
        { score: -1, text: "\\boxed{-1}" },
        { score: null, text: "?" },
      ],
      hints: ["The sum of 2 and 2 is 4."],
      representative: "correction \\boxed{-1}",
      judge: "base",
    });
    const gone = rollout.beginTurn(o("B", [{ role: "user", content: "secret" }]));
    rollout.completeTurn(gone, result("ok"));
    store.deleteSession("B");
    store.close();
    // The app may be mid-append while we export: a torn tail is skipped and left alone.
    const log = path.join(dir, "logs", "trajectories.jsonl");
    fs.appendFileSync(log, '{"kind":"turn","v":1,"turnId":"half');
    const sizeBefore = fs.statSync(log).size;

    const out = path.join(tempDir(), "export.jsonl");
    const r = runCli(["export", "--out", out, "--data-dir", dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /exported 2 turn\(s\) from 1 session\(s\)/);
    assert.match(r.stderr, /ignored a torn last line/);
    assert.equal(fs.statSync(log).size, sizeBefore);

    const lines = fs
      .readFileSync(out, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, 2);
    const [t1, t2] = lines;
    assert.deepEqual([t1.turnId, t1.sessionId, t1.index, t1.type, t1.adapter, t1.text], [a1.turnId, "A", 0, "main", "v1", "5"]);
    assert.deepEqual(t1.tokenLogprobs, [-0.75]);
    assert.deepEqual(t1.nextState, [{ role: "user", content: "No, try again." }]);
    assert.deepEqual([t1.feedback.thumbs, t1.feedback.hint], ["down", "Add correctly."]);
    assert.deepEqual(
      t1.feedbackHistory.map((f: { thumbs: string }) => f.thumbs),
      ["up", "down"],
    );
    assert.deepEqual(
      t1.judge.votes.map((v: { score: number | null }) => v.score),
      [-1, -1, null],
    );
    assert.deepEqual([t1.reward, t1.rewardSource], [-1, "thumbs"]);
    assert.deepEqual(t1.hints, ["Add correctly.", "The sum of 2 and 2 is 4."]);
    assert.equal(t1.prefixKey, undefined);
    assert.deepEqual([t2.turnId, t2.nextState, t2.reward, t2.hints], [a2.turnId, null, null, []]);
    assert.ok(!lines.some((l) => l.sessionId === "B"));
  });

  it("explains bad arguments in one line", () => {
    let r = runCli(["export"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--out is required/);
    r = runCli(["export", "--out", path.join(tempDir(), "x.jsonl"), "--data-dir", "/nonexistent/clawrl-data"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /data dir not found: \/nonexistent\/clawrl-data/);
    r = runCli(["export", "--out", "/nonexistent/dir/x.jsonl", "--data-dir", tempDir()]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /output directory not found/);
  });
});
