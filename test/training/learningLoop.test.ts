import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, checkpoints, feedback, runEnded, startLearningCore, waitFor, type CkptView } from "./helpers.js";

/**
 * The learning loop end to end on the tiny model, real processes: chat → feedback → the trainer
 * process trains → the gate publishes → later answers carry the new adapter version; rollback
 * to an earlier checkpoint; a damaged checkpoint is refused and the app stays where it was.
 */
describe("learning loop: feedback → train → gate → publish → swap → rollback", () => {
  let core: RunningCore;
  let events = "";
  const sse = new AbortController();
  before(async () => {
    // A generous gate (step, drift, fluency): this test is about the loop, gate.test.ts about the bounds.
    core = await startLearningCore({ gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } });
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

  async function publishedAfter(n: number) {
    return waitFor(`checkpoint ${n + 1}`, async () => {
      const list = await checkpoints(core);
      return list.find((c) => c.n === n + 1);
    });
  }

  it("serves the base model before any feedback, with the trainer not yet started", async () => {
    const r = await chat(core, "hello there");
    assert.equal(r.adapter, "base");
    const s = (await api(core, "GET", "/api/status")).json;
    assert.equal(s.training.state, "idle");
    assert.equal(s.training.activeCheckpoint, null);
    assert.equal(s.training.trainerPid, null);
    assert.equal(s.training.trainerMemory, null, "nothing measured before a trainer runs");
  });

  let firstMemory: { tensorBytes: number; wasmHeapBytes: number | null; rssBytes: number; at: string };

  it("trains on thumbs and hints, publishes checkpoint 1 and serves it", async () => {
    const a = await chat(core, "what is a cat");
    const b = await chat(core, "tell me a story");
    await feedback(core, a.turnId, "up", "mention that cats purr");
    const mid = (await api(core, "GET", "/api/status")).json;
    assert.equal(mid.training.samplesWaiting, 1, "one sample waits for a batch of 2");
    await feedback(core, b.turnId, "down");
    const c1 = await publishedAfter(0);
    assert.equal(c1.verdict, "published", `gate: ${c1.gate.reasons.join("; ")}`);
    assert.equal(c1.samples, 2);
    assert.equal(c1.version, "ckpt-1");
    assert.ok(c1.kl !== null && c1.kl >= 0);
    const next = await waitFor("an answer from ckpt-1", async () => {
      const r = await chat(core, "and now?");
      return r.adapter === "ckpt-1" ? r : undefined;
    });
    assert.equal(next.adapter, "ckpt-1");
    const st = (await api(core, "GET", "/api/status")).json;
    assert.equal(st.adapter, "ckpt-1");
    assert.equal(st.training.activeCheckpoint, 1);
    assert.ok(st.training.lastSwap.pauseMs >= 0);
    assert.ok(st.training.backend, "the status names the trainer's backend");
    assert.ok(st.training.stepSeconds > 0, `a step's time is known for the next run's time left (${st.training.stepSeconds})`);
    // What the trainer holds after the run (its tensors live in the wasm heap, inside its RSS).
    const afterRun = async (c: CkptView) => {
      const m = (await api(core, "GET", "/api/status")).json.training.trainerMemory;
      return m && m.at > c.createdAt ? m : undefined;
    };
    firstMemory = await waitFor("the trainer's memory after the run", () => afterRun(c1));
    assert.ok(firstMemory.tensorBytes > 0 && firstMemory.rssBytes > firstMemory.tensorBytes, JSON.stringify(firstMemory));
    if (st.training.backend === "wasm") assert.ok(firstMemory.wasmHeapBytes! >= firstMemory.tensorBytes && firstMemory.rssBytes >= firstMemory.wasmHeapBytes!);
    else assert.equal(firstMemory.wasmHeapBytes, null);
    // On disk: the whole checkpoint, metrics with the gate's verdict and the samples used.
    const dir = path.join(core.paths.checkpoints, "1");
    for (const f of ["adapter.gguf", "optimizer.bin", "metrics.json"]) assert.ok(fs.existsSync(path.join(dir, f)), f);
    const m = JSON.parse(fs.readFileSync(path.join(dir, "metrics.json"), "utf8"));
    assert.equal(m.gate.verdict, "published");
    assert.deepEqual([...m.sampleIds].sort(), [a.turnId, b.turnId].sort());
    assert.equal(m.samplesUsed, 2);
    assert.equal(typeof m.klToServing, "number");
    // The UI hears about it: training progress, the new checkpoint and the swap, over SSE.
    assert.match(events, /event: training\ndata: \{"training":\{"state":"training"/);
    // How far each part of the run is: the steps, then the gate's passes in the trainer.
    assert.match(events, /"state":"training"[^\n]*"progress":\{"part":"steps","fraction":0,/);
    assert.match(events, /"state":"training"[^\n]*"progress":\{"part":"steps","fraction":1,/);
    assert.match(events, /"state":"evaluating"[^\n]*"progress":\{"part":"scores",/);
    assert.match(events, /event: checkpoint\ndata: \{"checkpoint":\{"id":1,/);
    assert.match(events, /event: swap\ndata: \{"version":"ckpt-1","checkpoint":1,"pauseMs":/);
  });

  it("publishes checkpoint 2 from new feedback, then rolls back to 1 and forward again", async () => {
    const a = await chat(core, "what is a dog");
    const b = await chat(core, "sing a song");
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down", "keep it short");
    const c2 = await publishedAfter(1);
    assert.equal(c2.verdict, "published", `gate: ${c2.gate.reasons.join("; ")}`);
    await waitFor("an answer from ckpt-2", async () => ((await chat(core, "again")).adapter === "ckpt-2" ? true : undefined));
    const m2 = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, "2", "metrics.json"), "utf8"));
    assert.equal(m2.parent, 1, "trained on from checkpoint 1");
    assert.deepEqual([...m2.sampleIds].sort(), [a.turnId, b.turnId].sort(), "each sample trained once");
    // The second run (its gate read ckpt-1 as the serving adapter) left no tensor behind.
    const second = await waitFor("the trainer's memory after run 2", async () => {
      const m = (await api(core, "GET", "/api/status")).json.training.trainerMemory;
      return m && m.at > c2.createdAt ? m : undefined;
    });
    assert.equal(second.tensorBytes, firstMemory.tensorBytes);

    const back = await api(core, "POST", "/api/checkpoints/1/activate");
    assert.equal(back.status, 200, JSON.stringify(back.json));
    assert.equal(back.json.checkpoint.active, true);
    assert.ok(back.json.swap.pauseMs >= 0);
    assert.equal((await chat(core, "after rollback")).adapter, "ckpt-1");
    const list = await checkpoints(core);
    assert.deepEqual(
      list.filter((c) => c.active).map((c) => c.n),
      [1],
    );

    const fwd = await api(core, "POST", "/api/checkpoints/2/activate");
    assert.equal(fwd.status, 200);
    assert.equal((await chat(core, "after roll forward")).adapter, "ckpt-2");
  });

  it("pins a checkpoint and refuses bad checkpoint numbers clearly", async () => {
    const p = await api(core, "POST", "/api/checkpoints/1/pin", { pinned: true });
    assert.equal(p.status, 200);
    assert.equal(p.json.checkpoint.pinned, true);
    assert.equal((await checkpoints(core)).find((c) => c.n === 1)?.pinned, true);
    const missing = await api(core, "POST", "/api/checkpoints/99/activate");
    assert.equal(missing.status, 404);
    assert.match(missing.json.error.message, /no checkpoint 99/);
    const bad = await api(core, "POST", "/api/checkpoints/x/activate");
    assert.equal(bad.status, 400);
  });

  it("refuses a corrupted checkpoint with a clear message and keeps serving what it had", async () => {
    const file = path.join(core.paths.checkpoints, "1", "adapter.gguf");
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 8] ^= 0xff; // a flipped byte inside the tensor data
    fs.writeFileSync(file, bytes);
    const r = await api(core, "POST", "/api/checkpoints/1/activate");
    assert.equal(r.status, 422);
    assert.match(r.json.error.message, /checkpoint 1 is damaged: adapter\.gguf/);
    assert.equal((await chat(core, "still here")).adapter, "ckpt-2");
    assert.equal((await api(core, "GET", "/api/status")).json.training.activeCheckpoint, 2);
  });

  it("pauses and resumes; train-now with nothing ready says so", async () => {
    const p = await api(core, "POST", "/api/training/pause");
    assert.equal(p.json.training.paused, true);
    assert.equal((await api(core, "GET", "/api/status")).json.training.state, "paused");
    const a = await chat(core, "paused question");
    await feedback(core, a.turnId, "up");
    const b = await chat(core, "paused question two");
    await feedback(core, b.turnId, "up");
    const st = (await api(core, "GET", "/api/status")).json.training;
    assert.equal(st.samplesWaiting, 2, "a full batch waits while paused");
    assert.equal((await checkpoints(core)).length, 2, "nothing trains while paused");
    const r = await api(core, "POST", "/api/training/resume");
    assert.equal(r.json.training.paused, false);
    await publishedAfter(2);
    await runEnded(core);
    const none = await api(core, "POST", "/api/training/run");
    assert.equal(none.status, 409);
    assert.match(none.json.error.message, /no samples are ready/);
  });
});
