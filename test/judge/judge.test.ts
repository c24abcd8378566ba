import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, describe, it } from "node:test";
import { Engine } from "../../electron/core/inference/engine.js";
import { EndpointJudgeBackend, JudgeUnavailableError } from "../../electron/core/judge/backends.js";
import { judgeTurn } from "../../electron/core/judge/judge.js";
import { prmMessages } from "../../electron/core/judge/prompts.js";
import { JudgeService } from "../../electron/core/judge/service.js";
import { judgeBackendFactory } from "../../electron/core/judge/sources.js";
import type { JudgeRecord } from "../../electron/core/store/records.js";
import type { Store } from "../../electron/core/store/store.js";
import { tinyModel } from "../helpers/models.js";
import { addTurn, scriptedJudge, tempStore } from "./fixtures.js";

const input = {
  context: [{ role: "user" as const, content: "Convert 5 miles to km." }],
  answer: "5 miles is 8 miles.",
  nextState: [{ role: "user" as const, content: "No, I asked for kilometres. Try again." }],
};

function judgeLines(store: Store): JudgeRecord[] {
  const file = `${store.dataDir}/logs/trajectories.jsonl`;
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((r) => r.kind === "judge");
}

describe("judge against an OpenAI-compatible endpoint (scripted texts)", () => {
  it("m parallel votes with distinct seeds at the temperature; majority, invalid dropped, hints selected", async () => {
    const prm = ["The user corrects the unit. \\boxed{-1}", "Rephrased request: correction. \\boxed{1} no wait \\boxed{-1}", "I cannot tell \\boxed{maybe}"];
    const hints = [
      "\\boxed{1} [HINT_START]Convert miles to kilometres by multiplying by 1.609.[HINT_END]",
      "\\boxed{1} [HINT_START]Short.[HINT_END]",
      "\\boxed{1} [HINT_START]Give the answer in kilometres.[HINT_END]",
    ];
    const ep = await scriptedJudge((kind, i) => (kind === "prm" ? prm[i] : hints[i]));
    try {
      const backend = new EndpointJudgeBackend({ baseUrl: ep.baseUrl, model: "judge-model", apiKey: "sk-test" });
      const out = await judgeTurn(backend, input, { votes: 3, temperature: 0.6, seed: 100 });
      assert.equal(out.reward, -1);
      assert.deepEqual(
        out.votes.map((v) => v.score),
        [-1, -1, null],
      );
      assert.deepEqual(
        out.votes.map((v) => v.text),
        prm,
      );
      assert.equal(out.representative, prm[0]);
      assert.deepEqual(out.hints, ["Give the answer in kilometres.", "Convert miles to kilometres by multiplying by 1.609."]);
      assert.deepEqual(
        out.hintVotes!.map((v) => v.text),
        hints,
      );
      assert.equal(out.judge, `endpoint:judge-model@${ep.baseUrl}`);

      assert.equal(ep.requests.length, 6);
      const seeds = ep.requests.map((r) => r.body.seed);
      assert.equal(new Set(seeds).size, 6, `seeds ${seeds.join(",")}`);
      assert.ok(ep.requests.every((r) => r.body.temperature === 0.6 && r.body.model === "judge-model" && r.auth === "Bearer sk-test"));
      // The prompt carries the answer and the next state.
      const user = ep.requests[0].body.messages[1].content as string;
      assert.match(user, /5 miles is 8 miles\./);
      assert.match(user, /No, I asked for kilometres/);
      assert.match(user, /\\boxed\{1\}.*\\boxed\{-1\}.*\\boxed\{0\}/s);
    } finally {
      await ep.close();
    }
  });

  it("a tie gives 0 with no representative; failed votes are recorded as invalid; all failing is an error", async () => {
    const ep = await scriptedJudge((kind, i) => (kind === "prm" ? ["\\boxed{1}", "\\boxed{-1}", 500][i] : "\\boxed{-1}"));
    const backend = new EndpointJudgeBackend({ baseUrl: ep.baseUrl, model: "m" });
    try {
      const out = await judgeTurn(backend, input, { votes: 3 });
      assert.equal(out.reward, 0);
      assert.equal(out.representative, null);
      assert.equal(out.votes[2].score, null);
      assert.match(out.votes[2].error!, /answered 500: scripted failure/);
      assert.deepEqual(out.hints, []);
    } finally {
      await ep.close();
    }
    // Endpoint gone: every vote fails → nothing to record.
    await assert.rejects(judgeTurn(backend, input, { votes: 2 }), (e: Error) => e instanceof JudgeUnavailableError && /judge endpoint/.test(e.message));
  });
});

describe("the judge service", () => {
  it("judges turns that got their next state, in the background; the log holds all votes and raw texts; thumbs skip it", async () => {
    const ep = await scriptedJudge((kind, i) =>
      kind === "prm" ? `vote ${i}: \\boxed{1}` : `\\boxed{1} [HINT_START]Mention the distance in kilometres too (${i % 2}).[HINT_END]`,
    );
    const { store, bus } = tempStore();
    store.updateSettings({ judgeSource: { kind: "endpoint", baseUrl: ep.baseUrl, model: "m" }, judgeVotes: 5, judgeTemperature: 0.3 });
    const judged: string[] = [];
    bus.on("judge", (p) => judged.push(`${p.turnId}:${p.reward}`));
    const queue: number[] = [];
    bus.on("status", (p) => "judgeQueue" in p && queue.push(p.judgeQueue));
    // A turn judged from the backlog (already had its next state at start), one with thumbs (skipped), one without a next state.
    const backlog = addTurn(store, { next: [{ role: "user", content: "Thanks! And the sun?" }] });
    const thumbed = addTurn(store, { next: [{ role: "user", content: "ok" }] });
    store.appendFeedback(thumbed, { thumbs: "up" });
    const open = addTurn(store);
    const service = new JudgeService({ store, bus, backendFor: judgeBackendFactory(null), judge: { seed: 1 } });
    try {
      service.start();
      assert.equal(service.queueLength, 1);
      // A live one: next state arrives → turnReady.
      const live = addTurn(store, { next: [{ role: "user", content: "That is wrong." }] });
      bus.emit("turnReady", { turnId: live, sessionId: store.turnEntry(live)!.sessionId });
      bus.emit("turnReady", { turnId: thumbed, sessionId: store.turnEntry(thumbed)!.sessionId });
      bus.emit("turnReady", { turnId: open, sessionId: store.turnEntry(open)!.sessionId });
      await service.whenIdle();
      assert.equal(service.queueLength, 0);
      assert.ok(queue.includes(2) && queue.at(-1) === 0, `queue lengths ${queue.join(",")}`);
      assert.deepEqual(judged.sort(), [`${backlog}:1`, `${live}:1`].sort());
      const lines = judgeLines(store);
      assert.deepEqual(lines.map((l) => l.turnId).sort(), [backlog, live].sort());
      for (const l of lines) {
        assert.equal(l.votes.length, 5);
        assert.ok(l.votes.every((v) => v.score === 1 && /^vote \d: /.test(v.text)));
        assert.equal(l.hintVotes!.length, 5);
        assert.equal(l.hints.length, 2);
        assert.equal(l.sessionId, store.turnEntry(l.turnId)!.sessionId);
      }
      // Every raw text the endpoint sent is in the log, once.
      assert.deepEqual(lines.flatMap((l) => l.votes.map((v) => v.text)).sort(), Array.from({ length: 10 }, (_, i) => `vote ${i}: \\boxed{1}`).sort());
      assert.ok(ep.requests.every((r) => r.body.temperature === 0.3));
      assert.equal(store.turnView(live).reward, 1);
      assert.equal(store.turnView(live).rewardSource, "judge");
      assert.equal(store.turnEntry(thumbed)!.judge, null);
    } finally {
      await service.close();
      await ep.close();
      store.close();
    }
  });

  it("a turn with only an explicit hint is judged for its reward, without hint extraction", async () => {
    const ep = await scriptedJudge((kind) => (kind === "prm" ? "\\boxed{-1}" : "\\boxed{1} [HINT_START]A judge hint nobody needs.[HINT_END]"));
    const { store, bus } = tempStore();
    store.updateSettings({ judgeSource: { kind: "endpoint", baseUrl: ep.baseUrl, model: "m" } });
    const t = addTurn(store, { next: [{ role: "user", content: "Not what I asked." }] });
    store.appendFeedback(t, { hint: "Answer the question that was asked." });
    const service = new JudgeService({ store, bus, backendFor: judgeBackendFactory(null) });
    try {
      service.start();
      await service.whenIdle();
      const [line] = judgeLines(store);
      assert.deepEqual([line.turnId, line.reward, line.hintVotes, line.hints], [t, -1, [], []]);
      assert.ok(ep.requests.every((r) => r.kind === "prm"));
      assert.deepEqual([store.turnView(t).reward, store.turnView(t).rewardSource], [-1, "judge"]);
    } finally {
      await service.close();
      await ep.close();
      store.close();
    }
  });

  it("a judge failure records nothing and the turn is queued again on the next start", async () => {
    const ep = await scriptedJudge(() => 503);
    const { store, bus } = tempStore();
    store.updateSettings({ judgeSource: { kind: "endpoint", baseUrl: ep.baseUrl, model: "m" } });
    const warnings: string[] = [];
    const t = addTurn(store, { next: [{ role: "user", content: "hm" }] });
    let service = new JudgeService({ store, bus, backendFor: judgeBackendFactory(null), warn: (m) => warnings.push(m) });
    service.start();
    await service.whenIdle();
    await service.close();
    assert.equal(judgeLines(store).length, 0);
    assert.match(warnings[0], new RegExp(`judge: turn ${t} not judged: .*503`));
    await ep.close();

    const ok = await scriptedJudge(() => "\\boxed{-1}");
    store.updateSettings({ judgeSource: { kind: "endpoint", baseUrl: ok.baseUrl, model: "m" } });
    service = new JudgeService({ store, bus, backendFor: judgeBackendFactory(null) });
    service.start();
    await service.whenIdle();
    await service.close();
    await ok.close();
    assert.deepEqual(
      judgeLines(store).map((l) => [l.turnId, l.reward]),
      [[t, -1]],
    );
    store.close();
  });
});

describe("judge on the local model (base, no adapter, own context)", () => {
  let engine: Engine;
  before(async () => {
    engine = await Engine.load({ modelPath: await tinyModel({ arch: "qwen2" }), backend: "cpu", threads: 1, maxContextSize: 1024, sequences: 1 });
  });
  after(async () => {
    await engine?.close();
  });

  it("m votes from the served model's weights; the log line holds every vote and raw text; seeds make it repeatable", async () => {
    const { store, bus } = tempStore();
    store.updateSettings({ judgeVotes: 3 });
    const turnId = addTurn(store, { next: [{ role: "user", content: "No, that is wrong." }] });
    const service = new JudgeService({ store, bus, backendFor: judgeBackendFactory(engine, { threads: 1 }), judge: { seed: 7, maxTokens: 24 } });
    try {
      service.start();
      await service.whenIdle();
      const [line] = judgeLines(store);
      assert.ok(line, "no judge line");
      assert.equal(line.turnId, turnId);
      assert.equal(line.judge, `base:${engine.modelId}`);
      assert.equal(line.votes.length, 3);
      assert.equal(line.hintVotes!.length, 3);
      for (const v of [...line.votes, ...line.hintVotes!]) {
        assert.equal(typeof v.text, "string");
        assert.equal(v.error, undefined, v.error);
      }
      // Random weights: junk votes, but real generations (some text came out).
      assert.ok(line.votes.some((v) => v.text.length > 0));
      assert.ok([-1, 0, 1].includes(line.reward));
      // Distinct seeds → the votes differ; the same seed → the same text.
      const backend = await judgeBackendFactory(engine, { threads: 1 })({ kind: "base" }, 3);
      try {
        const input = { context: store.readTurn(turnId).messages, answer: "x", nextState: [{ role: "user" as const, content: "No." }] };
        const a = await judgeTurn(backend, input, { votes: 3, seed: 11, maxTokens: 16, hints: false });
        const b = await judgeTurn(backend, input, { votes: 3, seed: 11, maxTokens: 16, hints: false });
        assert.deepEqual(
          a.votes.map((v) => v.text),
          b.votes.map((v) => v.text),
        );
        assert.ok(new Set(a.votes.map((v) => v.text)).size > 1, `votes all equal: ${JSON.stringify(a.votes)}`);
      } finally {
        await backend.close();
      }
      // The serving context was not touched: still no adapter, and chat still works.
      assert.equal(engine.info().adapter, "base");
      const r = await engine.generate({ messages: [{ role: "user", content: "hi" }], maxTokens: 4, seed: 1 });
      assert.ok(r.responseTokens.length > 0);
    } finally {
      await service.close();
      store.close();
    }
  });

  it("a conversation too long for the judge's context is trimmed until it fits", async () => {
    const backend = await judgeBackendFactory(engine, { threads: 1, maxContextSize: 1024 })({ kind: "base" }, 1);
    try {
      const long = {
        ...input,
        context: Array.from({ length: 40 }, (_, i) => ({ role: "user" as const, content: `turn ${i}: ${"lorem ipsum ".repeat(100)}` })),
      };
      assert.equal(backend.fits(prmMessages(long), 8), false, "the default budget must not fit, or this test proves nothing");
      const out = await judgeTurn(backend, long, { votes: 1, seed: 2, maxTokens: 8, hints: false });
      assert.equal(out.votes[0].error, undefined, out.votes[0].error);
    } finally {
      await backend.close();
    }
  });

  it("another local GGUF as the judge; a missing file is a clear error", async () => {
    const other = await tinyModel({ arch: "llama" });
    const factory = judgeBackendFactory(engine, { threads: 1 });
    const backend = await factory({ kind: "gguf", path: other }, 2);
    try {
      assert.equal(backend.name, `gguf:${other}`);
      const out = await judgeTurn(backend, input, { votes: 2, seed: 3, maxTokens: 8, hints: false });
      assert.equal(out.votes.length, 2);
      assert.ok(out.votes.every((v) => v.error === undefined && typeof v.text === "string"));
    } finally {
      await backend.close();
    }
    await assert.rejects(
      factory({ kind: "gguf", path: "/nonexistent/judge.gguf" }, 2),
      (e: Error) => e instanceof JudgeUnavailableError && /cannot load the judge model \/nonexistent\/judge\.gguf/.test(e.message),
    );
  });
});
