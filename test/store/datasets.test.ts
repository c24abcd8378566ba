/**
 * `clawrl export --format kto|dpo`: the recorded feedback as TRL's datasets. The files are read
 * back by Python's json module line by line and checked against TRL's documented fields:
 * KTO (unpaired preference) {"prompt", "completion", "label": bool}, DPO (preference)
 * {"prompt", "chosen", "rejected"}; conversational messages for chat turns, strings for
 * plain-text completion turns.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import { EventBus } from "../../electron/core/rollout/events.js";
import { Rollout, type TurnOrigin } from "../../electron/core/rollout/rollout.js";
import { Store } from "../../electron/core/store/store.js";
import type { ChatMessage } from "../../electron/core/api/chatTypes.js";
import { runCli, tempDir } from "../helpers/cli.js";
import { result } from "../rollout/fixtures.js";

const origin = (sessionId: string, messages: ChatMessage[], extra: Partial<TurnOrigin> = {}, type = "main"): TurnOrigin => ({
  headers: { "x-session-id": sessionId, "x-turn-type": type },
  bodyFields: {},
  fromUi: false,
  messages,
  ...extra,
});

const P1: ChatMessage[] = [
  { role: "developer", content: "Be brief." },
  { role: "user", content: [{ type: "text", text: "2+2?" }] },
];

let dataDir: string;
before(() => {
  dataDir = tempDir();
  const store = Store.open(dataDir, { durable: false });
  const rollout = new Rollout({ store, bus: new EventBus() });
  const turn = (sid: string, messages: ChatMessage[], answer: string, extra: Partial<TurnOrigin> = {}, type = "main", res = {}) => {
    const t = rollout.beginTurn(origin(sid, messages, extra, type));
    rollout.completeTurn(t, result(answer, res));
    return t.turnId;
  };
  const good = turn("s1", P1, "4");
  const bad = turn("s2", P1, "5");
  const judgedGood = turn("s3", P1, "four");
  const judgedZero = turn("s4", P1, "maybe 4");
  turn("s5", P1, "no feedback");
  const tool = turn("s6", [{ role: "user", content: "weather in Paris?" }], "", {}, "main", {
    toolCalls: [{ id: "c1", name: "get_weather", arguments: '{"city":"Paris"}' }],
    finishReason: "tool_calls",
  });
  const side = turn("s7", [{ role: "user", content: "title this" }], "A title", {}, "side");
  const story = turn("s8", [{ role: "user", content: "Once upon a time" }], " there was a cat.", { format: "completion" });
  store.appendFeedback(good, { thumbs: "up" });
  store.appendFeedback(bad, { thumbs: "down", hint: "Add correctly." });
  store.appendJudge({ turnId: judgedGood, reward: 1, votes: [{ score: 1, text: "\\boxed{1}" }], hints: [], representative: null, judge: "base" });
  store.appendJudge({ turnId: judgedZero, reward: 0, votes: [{ score: 0, text: "\\boxed{0}" }], hints: [], representative: null, judge: "base" });
  store.appendFeedback(tool, { thumbs: "up" });
  store.appendFeedback(side, { thumbs: "up" });
  store.appendFeedback(story, { thumbs: "down" });
  store.close();
});

/** Python reads the file with json, line by line, and checks TRL's fields and types; prints what it read. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the rows Python printed, KTO or DPO; the assertions read their fields
function pythonRead(file: string, format: "kto" | "dpo"): any[] {
  const py = `
import json, sys
fields = {"kto": {"prompt", "completion", "label"}, "dpo": {"prompt", "chosen", "rejected"}}[sys.argv[2]]
def check_messages(v, roles):
    assert isinstance(v, list) and v, v
    for m in v:
        assert isinstance(m, dict) and m["role"] in roles and isinstance(m["content"], str), m
rows = []
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        row = json.loads(line)
        assert set(row) == fields, sorted(row)
        conversational = isinstance(row["prompt"], list)
        if conversational:
            check_messages(row["prompt"], {"system", "user", "assistant", "tool"})
        else:
            assert isinstance(row["prompt"], str)
        for k in fields - {"prompt", "label"}:
            if conversational:
                check_messages(row[k], {"assistant"})
            else:
                assert isinstance(row[k], str)
        if "label" in fields:
            assert isinstance(row["label"], bool)
        rows.append(row)
print(json.dumps(rows))
`;
  const r = spawnSync("python3", ["-c", py, file, format], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe("clawrl export --format kto|dpo (TRL datasets)", () => {
  it("kto: every main turn with a ±1 reward (thumbs, else the judge), TRL's unpaired-preference fields", () => {
    const out = path.join(tempDir(), "kto.jsonl");
    const r = runCli(["export", "--format", "kto", "--out", out, "--data-dir", dataDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /exported 5 KTO example\(s\) \(3 liked, 2 disliked\).*2 main turn\(s\) without a ±1 reward left out/);
    assert.match(r.stderr, /mixes chat turns .* --only chat or --only completion/);
    const rows = pythonRead(out, "kto");
    assert.equal(rows.length, 5);
    const sys = { role: "system", content: "Be brief." };
    const user = { role: "user", content: "2+2?" };
    assert.deepEqual(rows[0], { prompt: [sys, user], completion: [{ role: "assistant", content: "4" }], label: true });
    assert.deepEqual(rows[1], { prompt: [sys, user], completion: [{ role: "assistant", content: "5" }], label: false });
    assert.deepEqual(rows[2], { prompt: [sys, user], completion: [{ role: "assistant", content: "four" }], label: true }, "the judge's +1 labels it");
    assert.deepEqual(rows[3].completion, [
      { role: "assistant", content: "", tool_calls: [{ type: "function", id: "c1", function: { name: "get_weather", arguments: { city: "Paris" } } }] },
    ]);
    assert.deepEqual(rows[4], { prompt: "Once upon a time", completion: " there was a cat.", label: false }, "a plain-text turn is TRL's standard format");

    const chatOnly = path.join(tempDir(), "kto-chat.jsonl");
    const r2 = runCli(["export", "--format", "kto", "--only", "chat", "--out", chatOnly, "--data-dir", dataDir]);
    assert.equal(r2.code, 0, r2.stderr);
    assert.doesNotMatch(r2.stderr, /mixes/);
    assert.equal(pythonRead(chatOnly, "kto").length, 4);
  });

  it("dpo: each liked × disliked answer to the same prompt, TRL's preference fields", () => {
    const out = path.join(tempDir(), "dpo.jsonl");
    const r = runCli(["export", "--format", "dpo", "--out", out, "--data-dir", dataDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /exported 2 DPO pair\(s\) from 3 liked and 2 disliked answer\(s\) to 3 prompt\(s\)/);
    assert.doesNotMatch(r.stderr, /mixes/, "only chat turns are paired here");
    const rows = pythonRead(out, "dpo");
    const prompt = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "2+2?" },
    ];
    assert.deepEqual(rows, [
      { prompt, chosen: [{ role: "assistant", content: "4" }], rejected: [{ role: "assistant", content: "5" }] },
      { prompt, chosen: [{ role: "assistant", content: "four" }], rejected: [{ role: "assistant", content: "5" }] },
    ]);
  });

  it("jsonl stays the default; bad combinations are explained", () => {
    const out = path.join(tempDir(), "all.jsonl");
    const r = runCli(["export", "--out", out, "--data-dir", dataDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /exported 8 turn\(s\)/);
    let bad = runCli(["export", "--format", "csv", "--out", out, "--data-dir", dataDir]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--format must be one of jsonl, kto, dpo/);
    bad = runCli(["export", "--only", "chat", "--out", out, "--data-dir", dataDir]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--only applies to --format kto or dpo/);
    assert.ok(fs.existsSync(out));
  });
});
