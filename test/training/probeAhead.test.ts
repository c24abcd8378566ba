/**
 * The learning loop has the gate's fluency probe sample the base model's answers ahead (issue 31):
 * once samples are coming, it asks the probe to prepare exactly the prompts the gate's compare
 * then gets (same turns, settings and seeds); with `startAhead: false` it does not.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CompareOptions, FluencyComparison, FluencyMeasure, ProbePrompt } from "../../electron/core/inference/fluencyProbe.js";
import { chat, checkpoints, feedback, runEnded, startLearningCore, waitFor } from "./helpers.js";

/** Records what the loop asks; every candidate reads as well as the base model. */
class RecordingProbe implements FluencyMeasure {
  prepared: ProbePrompt[][] = [];
  compared: ProbePrompt[][] = [];
  /** What the loop asked, in order. */
  calls: Array<"prepare" | "hold" | "compare"> = [];
  prepare(prompts: ProbePrompt[]): void {
    this.prepared.push(prompts);
    this.calls.push("prepare");
  }
  holdAhead(): void {
    this.calls.push("hold");
  }
  async compare(_adapter: string, prompts: ProbePrompt[], _opts?: CompareOptions): Promise<FluencyComparison> {
    this.compared.push(prompts);
    this.calls.push("compare");
    const s = { meanLogprob: -2, tokens: 10 * prompts.length, answers: prompts.length };
    return { candidate: s, base: s, seconds: 0 };
  }
  async score(answers: Array<{ prompt: number[]; response: number[] }>): Promise<Array<number | null>> {
    return answers.map(() => -2);
  }
  async close(): Promise<void> {}
}

describe("the fluency probe's base answers, ahead of the run", () => {
  it("are asked for once a sample is ready, for the very prompts the gate's compare then samples", async () => {
    const probe = new RecordingProbe();
    const core = await startLearningCore({ probe });
    try {
      const a = await chat(core, "one");
      await feedback(core, a.turnId, "up");
      const first = await waitFor("the loop to ask for answers ahead", () => probe.prepared.at(-1));
      assert.equal(first.length, 4, "one prompt so far, 4 seeds");
      const b = await chat(core, "two", 2);
      await feedback(core, b.turnId, "down");
      await waitFor("a candidate", async () => (await checkpoints(core)).find((x) => x.n === 1));
      await runEnded(core);
      assert.equal(probe.compared.length, 1);
      const compared = probe.compared[0];
      assert.equal(compared.length, 8, "two prompts, 4 seeds each");
      // The last list asked for ahead before the run is what the gate sampled.
      const before = probe.prepared.filter((p) => p.length === compared.length).at(-1);
      assert.deepEqual(before, compared);
      // The run holds the ahead work as it starts (the trainer and chat get the CPU), and nothing prepares again before the gate compares.
      const hold = probe.calls.indexOf("hold");
      assert.ok(hold > 0, `prepared ahead, then held: ${probe.calls.join(",")}`);
      assert.deepEqual(probe.calls.slice(hold, probe.calls.indexOf("compare") + 1), ["hold", "compare"], probe.calls.join(","));
    } finally {
      await core.close();
    }
  });

  it("are not asked for with startAhead: false", async () => {
    const probe = new RecordingProbe();
    const core = await startLearningCore({ probe, startAhead: false } as unknown as Parameters<typeof startLearningCore>[0]);
    try {
      const a = await chat(core, "one");
      await feedback(core, a.turnId, "up");
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(probe.prepared.length, 0);
    } finally {
      await core.close();
    }
  });
});
