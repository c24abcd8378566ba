/**
 * Scoring ahead (issue 31), with the real trainer process: while samples wait for their run, the
 * warm trainer scores them with the base model (the KL anchor's pass, trainer/worker.ts
 * `prepare`), so the run's first step skips that pass for them; with β 0 there is no anchor and
 * nothing is scored ahead.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { api, chat, feedback, runEnded, startLearningCore, waitFor } from "./helpers.js";

describe("the warm trainer scores waiting samples ahead of their run", () => {
  let core: RunningCore | undefined;
  afterEach(async () => {
    await core?.close();
    core = undefined;
  });

  const status = async (c: RunningCore) => (await api(c, "GET", "/api/status")).json.training;

  /** One sample, the trainer started ahead and idle, a moment for its `prepare`; then the second sample makes the run due. Returns the run's first step's metrics. */
  async function cycle(klBeta: number): Promise<{ savedTokenBlocks?: number; samples: number }> {
    core = await startLearningCore();
    await api(core, "PATCH", "/api/settings", { klBeta });
    const a = await chat(core, "Say hello", 1);
    await feedback(core, a.turnId, "up");
    await waitFor("the trainer to start ahead and load", async () => {
      const s = await status(core!);
      return s.trainerPid !== null && s.state === "idle" && s.memory ? s : undefined;
    });
    // The prepare of one tiny sample takes milliseconds; the run's train command queues behind it anyway.
    await new Promise((r) => setTimeout(r, 1500));
    const b = await chat(core, "Say goodbye", 2);
    await feedback(core, b.turnId, "down");
    await waitFor("a checkpoint", async () => ((await api(core!, "GET", "/api/checkpoints")).json.checkpoints.length > 0 ? true : undefined), 600_000);
    await runEnded(core);
    const metrics = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, "1", "metrics.json"), "utf8")) as {
      steps: Array<{ savedTokenBlocks?: number; samples: number }>;
    };
    return metrics.steps[0];
  }

  it("β 0.1: the first step of the run skips the anchor's pass over the sample scored ahead", async () => {
    const first = await cycle(0.1);
    assert.equal(first.samples, 2);
    assert.ok((first.savedTokenBlocks ?? 0) > 0, `the first step's anchor pass skipped the sample scored ahead (saved ${first.savedTokenBlocks})`);
  });

  it("β 0: no anchor, nothing scored ahead or saved", async () => {
    const first = await cycle(0);
    assert.equal(first.savedTokenBlocks ?? 0, 0);
  });
});
