import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, checkpoints, feedback, runEnded, startLearningCore, waitFor } from "./helpers.js";

/**
 * Fault: the trainer process is killed (SIGKILL) in the middle of a run. The server keeps
 * answering on the adapter it had, the supervisor restarts the trainer, no half-written
 * checkpoint appears, and the run's samples are trained exactly once afterwards.
 */
describe("trainer killed mid-run", () => {
  let core: RunningCore;
  before(async () => {
    core = await startLearningCore({ stepsPerRun: 40, gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } });
  });
  after(async () => {
    await core?.close();
  });

  it("keeps serving, restarts the trainer, loses no sample and uses none twice", async () => {
    const a = await chat(core, "first question");
    const b = await chat(core, "second question");
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down", "answer in one sentence");
    const running = await waitFor("the trainer in a step", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.state === "training" && t.step >= 1 && t.trainerPid ? t : undefined;
    });
    const pid = running.trainerPid as number;
    assert.equal(os.getPriority(pid), 5, "the trainer runs at the niceness asked for");
    assert.ok(running.trainerMemory?.tensorBytes > 0, "what it holds is measured once it has loaded the model, before its first run ends");
    process.kill(pid, "SIGKILL");

    // Serving never depended on the trainer.
    const during = await chat(core, "are you there");
    assert.equal(during.adapter, "base");
    const restarted = await waitFor("a new trainer", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.restarts >= 1 && t.trainerPid && t.trainerPid !== pid ? t : undefined;
    });
    assert.match(restarted.lastError ?? "", /SIGKILL/);
    // The killed run left nothing behind: no checkpoint in the index, no directory on disk.
    assert.equal((await checkpoints(core)).length, 0);
    assert.deepEqual(
      fs.readdirSync(core.paths.checkpoints).filter((n) => /^\d+$/.test(n)),
      [],
    );

    // The samples went back to the pool and are trained by the new trainer, once.
    const c1 = await waitFor("checkpoint 1", async () => (await checkpoints(core)).find((c) => c.n === 1));
    assert.equal(c1.verdict, "published");
    const m = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, "1", "metrics.json"), "utf8"));
    assert.deepEqual([...m.sampleIds].sort(), [a.turnId, b.turnId].sort());
    assert.deepEqual(fs.readdirSync(core.paths.checkpoints).sort(), ["1"], "no staging directory remains");
    // Used once: nothing is ready to train again, and no other candidate holds them.
    await runEnded(core);
    const again = await api(core, "POST", "/api/training/run");
    assert.equal(again.status, 409, "the trained samples are not offered again");
    assert.deepEqual(
      (await checkpoints(core)).map((c) => c.n),
      [1],
    );
    await waitFor("an answer from ckpt-1", async () => ((await chat(core, "and now")).adapter === "ckpt-1" ? true : undefined));
    const after = (await api(core, "GET", "/api/status")).json.training;
    assert.equal(after.samplesWaiting, 0);
    assert.equal(after.lastError, null, "the good run cleared the kill's fault (issue 26 F9)");
  });

  it("after a core crash between writing a checkpoint and recording it, re-indexes it and trains none of its samples again", async () => {
    const dataDir = core.paths.root;
    await core.close();
    // What a crash right after the rename leaves: the directory, but no index entry and no
    // committed samples.
    const stateFile = path.join(dataDir, "state.json");
    const state = JSON.parse(fs.readFileSync(stateFile, "utf8"));
    state.checkpoints = [];
    state.training.activeCheckpoint = null;
    fs.writeFileSync(stateFile, JSON.stringify(state));
    fs.rmSync(path.join(dataDir, "training", "used.jsonl"), { force: true });
    core = await startLearningCore({ stepsPerRun: 40, gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } }, dataDir);
    const list = await checkpoints(core);
    assert.deepEqual(
      list.map((c) => [c.n, c.verdict]),
      [[1, "published"]],
    );
    assert.equal((await api(core, "GET", "/api/status")).json.training.samplesWaiting, 0);
    assert.equal((await api(core, "POST", "/api/training/run")).status, 409);
    const act = await api(core, "POST", "/api/checkpoints/1/activate");
    assert.equal(act.status, 200, JSON.stringify(act.json));
    assert.equal((await chat(core, "recovered")).adapter, "ckpt-1");
  });

  it("pause stops a run at once (samples back in the pool, nothing written); resume trains them", async () => {
    const a = await chat(core, "pause me");
    const b = await chat(core, "pause me too");
    await feedback(core, a.turnId, "up");
    await feedback(core, b.turnId, "down");
    const running = await waitFor("a run in progress", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.state === "training" && t.step >= 1 ? t : undefined;
    });
    await api(core, "POST", "/api/training/pause");
    const paused = await waitFor("the trainer stopped", async () => {
      const t = (await api(core, "GET", "/api/status")).json.training;
      return t.state === "paused" && t.trainerPid === null ? t : undefined;
    });
    assert.equal(paused.samplesWaiting, 2, "the run's samples are ready again");
    assert.equal(paused.restarts, running.restarts, "a pause is not a crash: no restart");
    assert.deepEqual(fs.readdirSync(core.paths.checkpoints), ["1"], "nothing staged or written");
    assert.equal((await chat(core, "while paused")).adapter, "ckpt-1");
    await api(core, "POST", "/api/training/resume");
    const c2 = await waitFor("checkpoint 2", async () => (await checkpoints(core)).find((c) => c.n === 2));
    const m = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, "2", "metrics.json"), "utf8"));
    assert.deepEqual([...m.sampleIds].sort(), [a.turnId, b.turnId].sort());
    assert.equal(c2.verdict, "published");
  });
});
