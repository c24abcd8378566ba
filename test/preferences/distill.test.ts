import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, checkpoints, startLearningCore, waitFor } from "../training/helpers.js";

/**
 * Issue 20's second Done-when on the tiny qwen2 model with the real learning loop: turns served
 * with a preference in the system prompt become context-distillation samples (teacher = the
 * policy with the block, student = the policy on the client's prompt alone); training on them
 * closes the gap measured on held-back turns, and the preference is then retired (it leaves the
 * prompt).
 */
describe("preferences: context distillation closes the gap, then the preference retires", () => {
  let core: RunningCore;
  before(async () => {
    // A generous gate: this test is about the distillation, gate.test.ts about the bounds. No
    // anchor to the base model (klBeta 0), so a few steps move the student visibly.
    core = await startLearningCore({ gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 }, stepsPerRun: 6 });
    const r = await api(core, "PATCH", "/api/settings", {
      learningMethod: "opd",
      heldBackShare: 0.5,
      batchSize: 64,
      autoLearn: false,
      klBeta: 0,
      learningRate: 5e-3,
      preferenceCheckTurns: 3,
      preferencesInPrompt: true,
      // Learned below 0.3 nats/token: about half the gap the block makes on the base model here (0.60).
      preferenceLearnedGap: 0.3,
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
  });
  after(async () => {
    await core?.close();
  });

  it("distils the block into the adapter (gap on held-back turns shrinks) and retires the preference", async () => {
    const made = await api(core, "POST", "/api/preferences", { text: "Always answer with a short poem about the sea." });
    assert.equal(made.status, 201);
    const id = made.json.preference.id as string;
    for (let i = 0; i < 20; i++) await chat(core, `question number ${i}: tell me something`, i + 1);

    // Before training: the base model with the block differs from it without.
    const before = await api(core, "POST", "/api/preferences/check");
    assert.equal(before.status, 200, JSON.stringify(before.json));
    const b = before.json.results.find((r: { id: string }) => r.id === id);
    assert.ok(b.turns >= 3, `held-back turns: ${b.turns}`);
    assert.equal(b.status, "active");
    assert.ok(b.gap > 0, `gap before training: ${b.gap}`);

    // Every non-held-back turn is a distillation sample (no thumbs, no hint).
    const training = (await api(core, "GET", "/api/status")).json.training;
    assert.ok(training.samplesWaiting >= 5, `samples waiting: ${training.samplesWaiting}`);
    assert.ok([200, 202].includes((await api(core, "POST", "/api/training/run")).status));
    const c1 = await waitFor("checkpoint 1", async () => (await checkpoints(core)).find((c) => c.n === 1 && c.active));
    assert.equal(c1.verdict, "published", `gate: ${c1.gate.reasons.join("; ")}`);

    // The swap set off a check by itself: the gap closed below the threshold, so the preference is learned.
    const learned = await waitFor(
      "the preference retired",
      async () => {
        const p = (await api(core, "GET", "/api/preferences")).json.preferences.find((x: { id: string }) => x.id === id);
        return p.status === "learned" ? p : undefined;
      },
      60_000,
    );
    assert.equal(learned.lastCheck.adapter, c1.version);
    assert.ok(learned.lastCheck.gap < b.gap * 0.8, `gap ${b.gap.toFixed(4)} → ${learned.lastCheck.gap.toFixed(4)}`);
    assert.ok(learned.lastCheck.gap < 0.3);
    assert.ok(typeof learned.learnedAt === "string");
    const change = learned.history.at(-1);
    assert.deepEqual([change.kind, change.by, change.from, change.to], ["status", "loop", "active", "learned"]);
    assert.match(change.reason, /^learned: gap 0\.\d+ nats\/token on \d+ held-back turns with adapter ckpt-1 < 0\.3$/);

    // It left the prompt: the next main turn has no block (the context it cost is free again).
    const next = await chat(core, "question number 99: tell me something", 99);
    const session = (await api(core, "GET", `/api/sessions/${(await api(core, "GET", "/api/sessions")).json.sessions[0].id}`)).json;
    const turn = session.turns.find((t: { turnId: string }) => t.turnId === next.turnId);
    assert.equal(turn.preferences, undefined);

    // Undoable: the user puts it back in the prompt.
    const undone = await api(core, "POST", `/api/preferences/${id}/undo`);
    assert.equal(undone.json.preference.status, "active");
  });
});
