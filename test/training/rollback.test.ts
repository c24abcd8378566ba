import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { isHeldBack } from "../../electron/core/rollout/heldBack.js";
import { repoRoot, tempDir } from "../helpers/cli.js";
import { api, checkpoints, waitFor } from "./helpers.js";

/**
 * The watch on what is served, end to end with real processes on stories260K (a real small
 * story model): the reader likes stories that read well. A good checkpoint is trained on the
 * reader's own thumbs and served; then a bad one is forced into serving: trained on inverted
 * preferences (every story the reader would like marked down) with a step far too large, through
 * a publish gate opened wide. The reader keeps rating what is served, on held-back turns (never
 * trained on), and the loop rolls back to the good parent by itself, saying why.
 */
const MODEL = path.join(repoRoot, "models", "test", "stories260K.gguf");
const SHARE = 0.5;
const PROMPTS = [
  "Once upon a time, there was a little girl named Lily.",
  "One day, a boy named Tim went to the park.",
  "Sue liked to play outside with her friend.",
  "Mom and Ben went to the store.",
];
/** The reader's taste: a story that reads like a story (common words), not noise. */
const readsWell = (t: string) => (t.toLowerCase().match(/\b(the|a|and|to|was|he|she|they|it|her|his)\b/g) ?? []).length >= 3;

describe("watch on the served adapter: a bad checkpoint is rolled back to its parent by itself", () => {
  let core: RunningCore;
  let events = "";
  const sse = new AbortController();
  let k = 0;
  /** A session id whose first turn is (or is not) held back: the reader's ratings are never trained on. */
  const session = (held: boolean) => {
    for (;;) {
      const s = `rb-${k++}`;
      if (isHeldBack({ sessionId: s, index: 0 }, SHARE) === held) return s;
    }
  };
  async function story(held: boolean, seed: number) {
    const res = await fetch(`${core.url}/v1/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json", "x-turn-type": "main", "x-session-id": session(held) },
      body: JSON.stringify({ model: "stories", prompt: PROMPTS[seed % PROMPTS.length], max_tokens: 32, seed, temperature: 1 }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { choices: Array<{ text: string }> };
    return { turnId: res.headers.get("x-clawrl-turn-id")!, adapter: res.headers.get("x-clawrl-adapter")!, text: body.choices[0].text };
  }
  const rate = (turnId: string, up: boolean) => api(core, "POST", "/api/feedback", { turnId, thumbs: up ? "up" : "down" });

  before(async () => {
    core = await startCore({
      model: MODEL,
      dataDir: tempDir("clawrl-rollback-"),
      token: "rollback-token",
      uiDir: "",
      engine: { maxContextSize: 256, sequences: 2, threads: 1, backend: "cpu" },
      // The gate is opened wide (no step bound, no preference check, no drift or fluency limit) so that the bad
      // checkpoint gets into service: the watch is what this test is about.
      training: {
        stepsPerRun: 8,
        restartBackoffMs: 200,
        worker: { niceness: 5 },
        gate: { klBound: 1e9, tolerance: 1e9, driftBudget: 1e9, fluencyMargin: 1e9 },
      },
    });
    const s = await api(core, "PATCH", "/api/settings", {
      heldBackShare: SHARE,
      batchSize: 4,
      learningRate: 1e-3,
      loraRank: 8,
      loraAlpha: 16,
      learningMethod: "binary",
      autoLearn: false,
      klBeta: 0,
      maxTrainContext: 128,
    });
    assert.equal(s.status, 200, JSON.stringify(s.json));
    const res = await fetch(`${core.url}/api/events?token=${core.token}`, { signal: sse.signal });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    void (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        events += dec.decode(value, { stream: true });
      }
    })().catch(() => undefined);
  });
  after(async () => {
    sse.abort();
    await core?.close();
  });

  async function train(): Promise<number> {
    const before = (await checkpoints(core)).length;
    const r = await api(core, "POST", "/api/training/run");
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const c = await waitFor("a new checkpoint", async () => (await checkpoints(core)).find((x) => x.n === before + 1));
    assert.equal(c.verdict, "published", c.gate.reasons.join("; "));
    await waitFor(`ckpt-${c.n} served`, async () => (await api(core, "GET", "/api/status")).json.adapter === c.version);
    return c.n;
  }

  it("serves a good checkpoint trained on the reader's thumbs, watched against the base model", async () => {
    for (let i = 0; i < 4; i++) {
      const s = await story(false, 100 + i);
      await rate(s.turnId, readsWell(s.text));
    }
    assert.equal(await train(), 1);
    const st = (await api(core, "GET", "/api/status")).json.training;
    assert.equal(st.watch.checkpoint, 1);
    assert.equal(st.watch.parent, null);
    // The reader rates what ckpt-1 serves: held-back turns, no samples.
    let good = 0;
    for (let i = 0; i < 10; i++) {
      const s = await story(true, 200 + i);
      assert.equal(s.adapter, "ckpt-1");
      if (readsWell(s.text)) good++;
      await rate(s.turnId, readsWell(s.text));
    }
    assert.ok(good >= 8, `ckpt-1 reads well (${good}/10)`);
    assert.equal((await api(core, "GET", "/api/status")).json.training.samplesWaiting, 0, "held-back ratings are never trained on");
  });

  it("a checkpoint trained on inverted preferences gets into service, is found clearly worse than its parent, and is rolled back by itself", async () => {
    await api(core, "PATCH", "/api/settings", { learningRate: 0.05 });
    for (let i = 0; i < 4; i++) {
      const s = await story(false, 300 + i);
      await rate(s.turnId, !readsWell(s.text)); // inverted
    }
    assert.equal(await train(), 2);
    const drift = (await checkpoints(core)).find((c) => c.n === 2) as unknown as { gate: { klToBase: { recent: number; heldBack: number } } };
    assert.ok(
      drift.gate.klToBase.recent > 1 && drift.gate.klToBase.heldBack > 1,
      `the gate measured the drift, held-back turns included (the wide-open gate let it pass): ${JSON.stringify(drift.gate.klToBase)}`,
    );
    const watching = (await api(core, "GET", "/api/status")).json.training.watch;
    assert.deepEqual([watching.checkpoint, watching.parent, watching.parentVersion], [2, 1, "ckpt-1"]);
    // The reader goes on rating what is served; after the 8th rating of ckpt-2 the rule can fire.
    let served2 = 0;
    for (let i = 0; i < 12 && served2 < 10; i++) {
      const s = await story(true, 400 + i);
      if (s.adapter !== "ckpt-2") break; // rolled back already
      served2++;
      await rate(s.turnId, readsWell(s.text));
    }
    assert.ok(served2 >= 8, `ckpt-2 answered ${served2} rated turns before the rollback`);
    const c2 = await waitFor("ckpt-2 rolled back", async () => (await checkpoints(core)).find((c) => c.n === 2 && c.verdict === "reverted"), 60_000);
    const view = (await api(core, "GET", "/api/checkpoints")).json;
    const ck2 = view.checkpoints.find((c: { n: number }) => c.n === 2);
    assert.equal(ck2.reverted.to, 1);
    assert.equal(ck2.reverted.rule, "reward");
    assert.match(
      ck2.reverted.reason,
      /^its answers were rated worse than checkpoint 1's: mean reward −\d\.\d\d over its last \d+ rated turns vs \+\d\.\d\d over \d+ \(one-sided Welch t-test p .* < 0\.01, drop ≥ 0\.25\)$/,
    );
    assert.equal(view.active, "ckpt-1");
    assert.equal(c2.active, false);
    const st = (await api(core, "GET", "/api/status")).json;
    assert.equal(st.adapter, "ckpt-1");
    assert.equal(st.training.activeCheckpoint, 1);
    assert.equal(st.training.lastRevert.checkpoint, 2);
    assert.equal(st.training.lastRevert.to, 1);
    assert.equal(st.training.watch, null, "the parent was put back by the watch, not published: not watched");
    assert.equal(st.training.lrScale, 0.5, "training goes on from the parent at half the step");
    assert.match(events, /event: revert\ndata: \{"checkpoint":2,"to":1,"version":"ckpt-1","reason":"its answers were rated worse/);
    // Kept: the checkpoint, with the rollback in its metrics; its samples stay trained (not offered again).
    const m = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, "2", "metrics.json"), "utf8"));
    assert.equal(m.reverted.to, 1);
    assert.equal(m.sampleIds.length, 4);
    assert.ok(fs.existsSync(path.join(core.paths.checkpoints, "2", "adapter.gguf")));
    assert.equal(st.training.samplesWaiting, 0);
    // What is served now reads well again.
    const after = await story(true, 999);
    assert.equal(after.adapter, "ckpt-1");
  });

  it("learning goes on from the parent, and the user may still serve the rolled-back checkpoint by hand (unwatched)", async () => {
    await api(core, "PATCH", "/api/settings", { learningRate: 1e-3 });
    for (let i = 0; i < 4; i++) {
      const s = await story(false, 500 + i);
      await rate(s.turnId, readsWell(s.text));
    }
    const n = await train();
    const m = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, String(n), "metrics.json"), "utf8"));
    assert.equal(m.parent, 1, "trained on from the parent, not from the rolled-back checkpoint");
    const r = await api(core, "POST", "/api/checkpoints/2/activate");
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal((await api(core, "GET", "/api/status")).json.training.watch, null);
  });
});
