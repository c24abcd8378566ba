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
  /** whether ahead work would wait now, as the loop says (holdAheadWhile) */
  hold: () => boolean = () => false;
  /** the hold as seen at each compare */
  heldAtCompare: boolean[] = [];
  prepare(prompts: ProbePrompt[]): void {
    this.prepared.push(prompts);
  }
  holdAheadWhile(hold: () => boolean): void {
    this.hold = hold;
  }
  async compare(_adapter: string, prompts: ProbePrompt[], _opts?: CompareOptions): Promise<FluencyComparison> {
    this.compared.push(prompts);
    this.heldAtCompare.push(this.hold());
    const s = { meanLogprob: -2, tokens: 10 * prompts.length, answers: prompts.length };
    return { candidate: s, base: s, seconds: 0, baseSampled: 0 };
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
      // One sample of a batch of 2: the trainer starts ahead, and the probe's ahead work waits for its start.
      await waitFor("the trainer to start", async () => (probe.hold() ? true : undefined));
      await waitFor("the trainer to be loaded and idle", async () => (probe.hold() ? undefined : true));
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
      // Ahead work waits while the trainer works (a run: its gate included), and not once it is idle.
      assert.deepEqual(probe.heldAtCompare, [true]);
      assert.equal(probe.hold(), false, "the run over, the trainer idle: ahead work may go on");
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
