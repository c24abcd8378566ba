import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { Checkpoints, KEEP_NEWEST } from "../../electron/core/training/checkpoints.js";
import { GATE_DEFAULTS, gateVerdict } from "../../electron/core/training/gate.js";
import { Store } from "../../electron/core/store/store.js";
import { commandSchema, replySchema } from "../../trainer/protocol.js";
import { tempDir } from "../helpers/cli.js";
import { api, chat, checkpoints, feedback, startLearningCore, waitFor } from "./helpers.js";

const cmp = (candidate: number, serving: number, count = 1) => ({ candidate, serving, count });

describe("publish gate rules", () => {
  const opts = { ...GATE_DEFAULTS, klBound: 0.05, tolerance: 1e-4 };
  it("publishes a small step that keeps liked answers likely and disliked ones unlikely", () => {
    const g = gateVerdict({ kl: 0.01, liked: cmp(-2.0, -2.1), disliked: cmp(-3.2, -3.0) }, opts);
    assert.equal(g.verdict, "published");
    assert.deepEqual(g.reasons, []);
  });
  it("rejects a step whose KL to the serving policy is above the bound", () => {
    const g = gateVerdict({ kl: 0.2, liked: cmp(-2, -2), disliked: cmp(-3, -3) }, opts);
    assert.equal(g.verdict, "rejected");
    assert.match(g.reasons[0], /KL .* above the bound 0.05/);
  });
  it("with liked and disliked answers, rejects a step that shrinks their margin", () => {
    assert.match(
      gateVerdict({ kl: 0, liked: cmp(-2.01, -2.0), disliked: cmp(-3, -3) }, opts).reasons.join(),
      /liked answers lost ground to disliked ones \(margin 0\.9900 < 1\.0000/,
    );
    assert.match(gateVerdict({ kl: 0, liked: cmp(-2, -2), disliked: cmp(-2.9, -3.0) }, opts).reasons.join(), /lost ground/);
    // Both more likely, the disliked ones more so: the preference shrank.
    assert.equal(gateVerdict({ kl: 0, liked: cmp(-1.9, -2), disliked: cmp(-2.7, -3.0) }, opts).verdict, "rejected");
  });
  it("publishes a step that moves everything but widens the margin (the eval's rejected OPD step)", () => {
    const g = gateVerdict({ kl: 0.02, liked: cmp(-1.5623, -1.4534), disliked: cmp(-1.7944, -1.5288) }, opts);
    assert.equal(g.verdict, "published", g.reasons.join());
  });
  it("with one kind only, compares that kind", () => {
    const none = { candidate: null, serving: null, count: 0 };
    assert.match(gateVerdict({ kl: 0, liked: cmp(-2.01, -2.0), disliked: none }, opts).reasons.join(), /liked answers became less likely/);
    assert.equal(gateVerdict({ kl: 0, liked: cmp(-1.99, -2.0), disliked: none }, opts).verdict, "published");
    assert.match(gateVerdict({ kl: 0, liked: none, disliked: cmp(-2.9, -3.0) }, opts).reasons.join(), /disliked answers became more likely/);
    assert.equal(gateVerdict({ kl: 0, liked: none, disliked: cmp(-3.1, -3.0) }, opts).verdict, "published");
  });
  it("ignores float-rounding differences within the tolerance, and empty comparisons", () => {
    assert.equal(gateVerdict({ kl: 0, liked: cmp(-2.00001, -2.0), disliked: cmp(-2.99999, -3.0) }, opts).verdict, "published");
    assert.equal(
      gateVerdict({ kl: null, liked: { candidate: null, serving: null, count: 0 }, disliked: { candidate: null, serving: null, count: 0 } }, opts).verdict,
      "published",
    );
  });
  it("treats a NaN KL as over the bound", () => {
    assert.equal(gateVerdict({ kl: Number.NaN, liked: cmp(0, 0, 0), disliked: cmp(0, 0, 0) }, opts).verdict, "rejected");
  });
});

describe("publish gate: drift from the base model and fluency of the candidate's own answers", () => {
  const none = { candidate: null, serving: null, count: 0 };
  const ev = (recent: number | null, heldBack: number | null) => ({
    kl: 0.01,
    liked: none,
    disliked: none,
    klToBase: { recent, heldBack, recentPositions: 10, heldBackPositions: 10 },
  });
  const fl = (candidate: number | null, base: number | null) => ({ candidate, base, answers: 16, tokens: 700, seconds: 1 });
  it(`rejects a candidate whose KL to the base model is over the budget (${GATE_DEFAULTS.driftBudget} nats/token) on recent prompts or on held-back turns`, () => {
    assert.equal(gateVerdict(ev(0.1, 0.1)).verdict, "published");
    const recent = gateVerdict(ev(GATE_DEFAULTS.driftBudget + 0.01, 0.1));
    assert.equal(recent.verdict, "rejected");
    assert.match(recent.reasons.join(), new RegExp(`KL to the base model on recent prompts 0\\.\\d+ is above the drift budget ${GATE_DEFAULTS.driftBudget}`));
    assert.match(gateVerdict(ev(0.1, GATE_DEFAULTS.driftBudget * 2)).reasons.join(), /KL to the base model on held-back turns .* above the drift budget/);
    assert.equal(gateVerdict(ev(null, null)).verdict, "published", "nothing to measure passes");
    assert.equal(gateVerdict(ev(Number.NaN, null)).verdict, "rejected");
    const g = gateVerdict(ev(0.1, 0.2));
    assert.deepEqual([g.driftBudget, g.klToBase?.recent, g.klToBase?.heldBack], [GATE_DEFAULTS.driftBudget, 0.1, 0.2]);
  });
  it(`rejects a candidate whose own answers read more than ${GATE_DEFAULTS.fluencyMargin} nats/token worse to the base model than the base model's own`, () => {
    const m = GATE_DEFAULTS.fluencyMargin;
    assert.equal(gateVerdict(ev(0.1, 0.1), GATE_DEFAULTS, fl(-1.4 - m + 0.01, -1.4)).verdict, "published");
    const bad = gateVerdict(ev(0.1, 0.1), GATE_DEFAULTS, fl(-1.4 - m - 0.01, -1.4));
    assert.equal(bad.verdict, "rejected");
    assert.match(
      bad.reasons.join(),
      new RegExp(`its own answers read worse to the base model than the base model's own \\(-1\\.\\d+ < -1\\.400 − ${m} nats/token\\)`),
    );
    assert.equal(gateVerdict(ev(0.1, 0.1), GATE_DEFAULTS, fl(null, -1.4)).verdict, "published", "no answer token: nothing to compare");
    assert.deepEqual(bad.fluency, fl(-1.4 - m - 0.01, -1.4));
  });
});

describe("trainer protocol", () => {
  it("refuses malformed commands and replies with a path to the problem", () => {
    const bad = commandSchema.safeParse({ type: "train", id: 1, runId: "r", samples: [], steps: 1, lr: 1e-3, batchSize: 2, outDir: "/x" });
    assert.equal(bad.success, false);
    assert.equal(commandSchema.safeParse({ type: "nope", id: 1 }).success, false);
    assert.equal(
      commandSchema.safeParse({ type: "evaluate", id: 1, runId: "r", servingAdapter: null, prompts: [{ tokens: [1, 2], start: 2 }], liked: [], disliked: [] })
        .success,
      false,
      "start past the end",
    );
    assert.equal(replySchema.safeParse({ type: "progress", id: 1, runId: "r", step: 1, steps: 2, loss: 0.5, optimizerStep: 3 }).success, true);
  });
});

describe("checkpoint store", () => {
  function stage(root: string, name: string): string {
    const d = path.join(root, name);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, "adapter.gguf"), `adapter ${name}`);
    fs.writeFileSync(path.join(d, "optimizer.bin"), `optimizer ${name}`);
    fs.writeFileSync(path.join(d, "metrics.json"), JSON.stringify({ version: 1, totalSteps: 1 }));
    return d;
  }
  const info = (runId: string) => ({
    verdict: "published" as const,
    runId,
    sampleIds: [runId],
    meanReward: 1,
    loss: 0.1,
    kl: 0.001,
    gate: gateVerdict({ kl: 0.001, liked: cmp(0, 0, 0), disliked: cmp(0, 0, 0) }),
    totalSteps: 1,
    parent: null,
    model: "tiny.gguf",
  });

  it("keeps the newest 20 plus pinned and active ones, numbers them in order, and removes staging leftovers", async () => {
    const dataDir = tempDir("clawrl-ckpt-");
    const store = Store.open(dataDir);
    try {
      const ck = new Checkpoints(store, path.join(dataDir, "checkpoints"));
      const first = await ck.commit(stage(ck.root, ".staging-a0"), info("a0"));
      assert.equal(first.id, 1);
      ck.update(1, { pinned: true });
      const second = await ck.commit(stage(ck.root, ".staging-a1"), info("a1"));
      store.updateState((d) => {
        d.training.activeCheckpoint = second.id;
      });
      for (let i = 2; i < KEEP_NEWEST + 5; i++) await ck.commit(stage(ck.root, `.staging-a${i}`), info(`a${i}`));
      const ids = ck.list().map((c) => c.id);
      assert.equal(ids.length, KEEP_NEWEST + 2);
      assert.ok(ids.includes(1) && ids.includes(2), "pinned and active kept");
      assert.ok(!ids.includes(3) && fs.existsSync(path.join(ck.root, "1")) && !fs.existsSync(path.join(ck.root, "3")));
      assert.equal(Math.max(...ids), KEEP_NEWEST + 5);
      const m = JSON.parse(fs.readFileSync(path.join(ck.root, "2", "metrics.json"), "utf8"));
      assert.equal(m.totalSteps, 1, "the trainer's fields stay");
      assert.equal(m.gate.verdict, "published");
      stage(ck.root, ".staging-left");
      assert.equal(ck.cleanStaging(), 1);
      fs.writeFileSync(path.join(ck.root, "2", "optimizer.bin"), "changed");
      assert.throws(() => ck.verifyFiles(2), /checkpoint 2 is damaged: optimizer\.bin does not match/);
      fs.rmSync(path.join(ck.root, "2", "adapter.gguf"));
      assert.throws(() => ck.verifyFiles(2), /adapter\.gguf is missing/);
    } finally {
      store.close();
    }
  });
});

describe("drift and fluency rejections in the running loop", () => {
  it("rejects a candidate over the drift budget with the reason, and records its drift", async () => {
    const core = await startLearningCore({ gate: { klBound: 10, driftBudget: 1e-12 } });
    try {
      const a = await chat(core, "one");
      const b = await chat(core, "two");
      await feedback(core, a.turnId, "up");
      await feedback(core, b.turnId, "down");
      const c = await waitFor("a candidate", async () => (await checkpoints(core)).find((x) => x.n === 1));
      assert.equal(c.verdict, "rejected");
      assert.match(c.gate.reasons.join(), /KL to the base model on recent prompts .* is above the drift budget 1e-12/);
      const view = (await api(core, "GET", "/api/checkpoints")).json.checkpoints[0];
      assert.ok(view.klToBase.recent > 0, JSON.stringify(view.klToBase));
      assert.equal(view.fluency, null, "not sampled: already rejected");
      const hist = (await api(core, "GET", "/api/training")).json.history;
      assert.equal(hist[0].driftBudget, 1e-12);
      assert.ok(hist[0].klToBase > 0);
    } finally {
      await core.close();
    }
  });
  it("samples a passing candidate's own answers with llama.cpp, and rejects it when they read worse than the margin allows", async () => {
    // A margin no candidate can meet (its answers would have to read 1e6 nats/token better than the base model's).
    const core = await startLearningCore({ gate: { klBound: 10, fluencyMargin: -1e6 } });
    try {
      const a = await chat(core, "one");
      const b = await chat(core, "two");
      await feedback(core, a.turnId, "up");
      await feedback(core, b.turnId, "down");
      const c = await waitFor("a candidate", async () => (await checkpoints(core)).find((x) => x.n === 1));
      assert.equal(c.verdict, "rejected");
      assert.match(c.gate.reasons.join(), /its own answers read worse to the base model than the base model's own/);
      const f = (await api(core, "GET", "/api/checkpoints")).json.checkpoints[0].fluency;
      assert.ok(f.answers >= 2 && f.tokens > 0 && f.candidate < 0 && f.base < 0, JSON.stringify(f));
    } finally {
      await core.close();
    }
  });
});

describe("gate rejection in the running loop", () => {
  let core: RunningCore;
  before(async () => {
    // A bound no real update can meet: every candidate is rejected.
    core = await startLearningCore({ gate: { klBound: 1e-12 } });
  });
  after(async () => {
    await core?.close();
  });

  it("keeps a rejected candidate for inspection, serves what it had, and halves the step", async () => {
    const a = await chat(core, "one");
    const b = await chat(core, "two");
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down");
    const c = await waitFor("a candidate", async () => (await checkpoints(core)).find((x) => x.n === 1));
    assert.equal(c.verdict, "rejected");
    assert.match(c.gate.reasons.join(), /above the bound/);
    assert.equal(c.active, false);
    assert.ok(fs.existsSync(path.join(core.paths.checkpoints, "1", "adapter.gguf")), "kept on disk");
    const st = await waitFor("idle after the rejection", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.state === "idle" ? t : undefined;
    });
    assert.equal(st.lrScale, 0.5);
    assert.equal(st.activeCheckpoint, null);
    assert.equal((await chat(core, "three")).adapter, "base");
    const r = await api(core, "POST", "/api/checkpoints/1/activate");
    assert.equal(r.status, 409);
    assert.match(r.json.error.message, /rejected by the publish gate/);
  });
});
