/**
 * Start ahead (issue 31), with the real trainer process: it starts once a sample is ready, before
 * a run is due, so the run does not wait for it; two cycles run on the same process (pid
 * unchanged) and both train; an idle trainer is stopped when the machine runs short of memory
 * (no restart), and starts again when there is work and memory.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, feedback, runEnded, startLearningCore, waitFor } from "./helpers.js";

describe("the trainer starts ahead and stays warm between cycles", () => {
  let core: RunningCore;
  let available = 64 * 2 ** 30;
  before(async () => {
    // Options the core passes through to the supervisor (core.ts spreads `training`).
    const extra = { memoryCheckMs: 200, lowMemoryBytes: 2 ** 30, availableBytes: () => available };
    core = await startLearningCore(extra as unknown as Parameters<typeof startLearningCore>[0]);
  });
  after(async () => {
    await core?.close();
  });

  const status = async () => (await api(core, "GET", "/api/status")).json.training;
  const checkpoints = async () =>
    (await api(core, "GET", "/api/checkpoints")).json.checkpoints as Array<{ id: number; totalSteps?: number; loss: number | null }>;

  it("one sample of a batch of 2: the trainer starts and loads, no run yet", async () => {
    assert.equal((await status()).trainerPid, null, "no trainer before any sample");
    const a = await chat(core, "Say hello", 1);
    await feedback(core, a.turnId, "up");
    const st = await waitFor("the trainer to start ahead and load", async () => {
      const s = await status();
      return s.trainerPid !== null && s.state === "idle" && s.memory ? s : undefined;
    });
    assert.equal((await checkpoints()).length, 0, "nothing trained yet");
    assert.ok(st.trainerMemory === null || st.trainerMemory.rssBytes > 0, "the idle trainer's memory is in the status");
  });

  it("two cycles on the same trainer process, each training a checkpoint", async () => {
    const pid = (await status()).trainerPid;
    for (let cycle = 1; cycle <= 2; cycle++) {
      for (let i = cycle === 1 ? 1 : 0; i < 2; i++) {
        const t = await chat(core, `Question ${cycle}.${i}`, 10 * cycle + i);
        await feedback(core, t.turnId, i % 2 === 0 ? "up" : "down");
      }
      await waitFor(`checkpoint ${cycle}`, async () => ((await checkpoints()).length >= cycle ? true : undefined), 600_000);
      await runEnded(core);
      assert.equal((await status()).trainerPid, pid, `cycle ${cycle} ran on the trainer started ahead`);
    }
    const cks = await checkpoints();
    assert.equal(cks.length, 2);
    for (const c of cks) assert.ok(c.loss !== null && Number.isFinite(c.loss), `checkpoint ${c.id} trained (loss ${c.loss})`);
    assert.equal((await status()).restarts, 0);
  });

  it("low memory: the idle trainer is stopped and not restarted; with memory back, a sample starts one again", async () => {
    available = 256 * 2 ** 20;
    await waitFor("the idle trainer to stop", async () => ((await status()).trainerPid === null ? true : undefined), 60_000);
    const t = await chat(core, "One more", 99);
    await feedback(core, t.turnId, "up");
    await new Promise((r) => setTimeout(r, 1000));
    const st = await status();
    assert.equal(st.trainerPid, null, "no start ahead while memory is short");
    assert.equal(st.restarts, 0, "a stop for memory is not a crash");
    available = 64 * 2 ** 30;
    await waitFor("the trainer to start ahead again", async () => ((await status()).trainerPid !== null ? true : undefined), 60_000);
  });
});

describe("a batch filled while the trainer is still starting ahead", () => {
  let core: RunningCore;
  before(async () => {
    core = await startLearningCore();
  });
  after(async () => {
    await core?.close();
  });

  it("runs as soon as the trainer is ready", async () => {
    const a = await chat(core, "First", 1);
    const b = await chat(core, "Second", 2);
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down");
    await waitFor("checkpoint 1", async () => ((await api(core, "GET", "/api/checkpoints")).json.checkpoints.length >= 1 ? true : undefined), 300_000);
  });
});
