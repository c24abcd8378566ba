import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultSettings } from "../../electron/core/api/settings.js";
import { halvedLrScale, lrScalesOf, MIN_LR_SCALE, runBatchSize, runLearningRate, trainSettingsOf } from "../../electron/core/training/trainOptions.js";

/** The one settings → trainer mapping and learning-rate policy that the supervisor and the eval's replay share. */
describe("trainer options from the settings", () => {
  it("maps the settings to the trainer's options", () => {
    const s = {
      ...defaultSettings(),
      learningMethod: "opd" as const,
      loraRank: 4,
      loraAlpha: 8,
      learningRate: 2e-3,
      maxTrainContext: 256,
      teacherSource: "base" as const,
      klBeta: 0.5,
      batchSize: 3,
    };
    assert.deepEqual(trainSettingsOf(s), { method: "opd", rank: 4, alpha: 8, lr: 2e-3, maxContext: 256, teacher: "base", seed: 0, klBeta: 0.5 });
    // The learning policy as its own teacher is the trainer's "current".
    assert.equal(trainSettingsOf({ ...s, teacherSource: "policy" }).teacher, "current");
    assert.equal(trainSettingsOf({ ...s, maxTrainContext: null }).maxContext, 1024);
    assert.equal(runBatchSize(1, s), 1);
    assert.equal(runBatchSize(5, s), 3);
    assert.equal(runLearningRate(s, 0.25), 5e-4);
  });

  it("halves the step down to a floor", () => {
    assert.equal(halvedLrScale(1), 0.5);
    assert.equal(halvedLrScale(MIN_LR_SCALE), MIN_LR_SCALE);
    assert.equal(halvedLrScale(0.5, 0.5), 0.5);
  });

  it("replays the scale each checkpoint's run used from the history", () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    const scales = lrScalesOf([
      { n: 1, createdAt: at(1), verdict: "rejected" },
      { n: 2, createdAt: at(2), verdict: "rejected" },
      { n: 3, createdAt: at(3), verdict: "reverted", reverted: { at: at(4) } },
      { n: 4, createdAt: at(5), verdict: "published" },
      { n: 5, createdAt: at(6), verdict: "published" },
    ]);
    // 1 → rejected (½) → rejected (¼) → published (1) → rolled back (½) → published (1).
    assert.deepEqual(
      [...scales],
      [
        [1, 1],
        [2, 0.5],
        [3, 0.25],
        [4, 0.5],
        [5, 1],
      ],
    );
  });
});
