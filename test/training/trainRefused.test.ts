import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, feedback, startLearningCore, waitFor } from "./helpers.js";

/**
 * The trainer's memory plan refuses the served model (the trainer process alone is kept to
 * 100 MiB: WorkerSpawnOptions.env). Learning is off, the trainer is not restarted as after a
 * crash, serving goes on, "Train now" plans again, and GET /api/models gives the served model
 * the trainer's own verdict while the other models are planned with the core's RAM.
 */
describe("a served model the trainer refuses", () => {
  let core: RunningCore;
  const states: string[] = [];
  before(async () => {
    delete process.env.CLAWRL_TRAINER_RAM_LIMIT;
    core = await startLearningCore({ worker: { niceness: 5, env: { CLAWRL_TRAINER_RAM_LIMIT: "100M" } } });
    core.bus.on("training", (p) => states.push((p.training as { state: string }).state));
  });
  after(async () => {
    await core?.close();
  });

  const training = async () => (await api(core, "GET", "/api/status")).json.training;

  it("turns learning off without restarts, keeps serving, and plans again on Train now", async () => {
    const a = await chat(core, "first question");
    await feedback(core, a.turnId, "up");
    assert.equal((await api(core, "POST", "/api/training/run")).status, 202);
    const off = await waitFor("the refusal", async () => {
      const t = await training();
      return t.state === "error" && t.memory ? t : undefined;
    });
    assert.equal(off.memory.fits, false);
    assert.equal(off.memory.availableHostBytes, 100 * 2 ** 20);
    assert.equal(off.backend, "wasm", "named by the refused plan");
    assert.match(off.lastError, /^learning is off for this model: cannot train qwen2/);
    await new Promise((r) => setTimeout(r, 1000)); // 5× the restart back-off
    const later = await training();
    assert.equal(later.state, "error");
    assert.equal(later.restarts, 0);
    assert.equal(later.trainerPid, null);
    assert.equal(later.samplesWaiting, 1, "the sample stays for a model that can learn");

    assert.equal((await chat(core, "still there?")).adapter, "base");

    const spawned = states.filter((s) => s === "starting").length;
    assert.equal((await api(core, "POST", "/api/training/run")).status, 202);
    await waitFor("a second plan", async () => states.filter((s) => s === "starting").length > spawned && (await training()).state === "error");
    assert.equal((await training()).restarts, 0);
  });

  it("GET /api/models: the served model's verdict is the trainer's plan; the others use the core's RAM", async () => {
    const m = (await api(core, "GET", "/api/models")).json;
    assert.equal(m.active.training.fits, false);
    assert.equal(m.active.training.limit, "memory");
    assert.equal(m.active.training.backend, "wasm");
    assert.equal(m.active.training.availableHostBytes, 100 * 2 ** 20, "the trainer's own limit, not the core's");
    assert.match(m.active.training.summary, /^cannot train qwen2/);
    const smallest = m.catalog.find((c: { id: string }) => c.id === "smollm2-135m-instruct");
    assert.equal(smallest.training.backend, "wasm");
    assert.ok(smallest.training.availableHostBytes > 100 * 2 ** 20, "the core has no limit");
  });
});
