import assert from "node:assert/strict";
import path from "node:path";
import { describe, it } from "node:test";
import { loadScenario, parseScenario } from "../../electron/core/eval/scenario.js";
import { repoRoot } from "../helpers/cli.js";

const minimal = () => ({
  name: "t",
  template: { kind: "completion", text: "{prompt}" },
  trainPrompts: ["a"],
  heldOutPrompts: ["b"],
  reactions: { otherwise: { thumbs: "down", hint: "add a cat" } },
  scorer: { kind: "rules", checks: [{ rule: { regex: "\\bcat\\b" } }] },
});

/**
 * Steps per learning cycle: the app's steps policy (training/stepsPolicy.ts) unless a scenario
 * fixes a count, so the learning eval measures what the app does (docs/method.md, "Steps per cycle").
 */
describe("steps per learning cycle in the eval", () => {
  it("a scenario without stepsPerRun leaves it to the app's policy; one that sets it keeps its own", () => {
    assert.equal(parseScenario(minimal()).training.stepsPerRun, undefined);
    assert.equal(parseScenario({ ...minimal(), training: { batchSize: 2 } }).training.stepsPerRun, undefined);
    assert.equal(parseScenario({ ...minimal(), training: { batchSize: 2, stepsPerRun: 3 } }).training.stepsPerRun, 3);
  });

  it("the shipped stories scenarios (the README's learning figures, test/eval/learns.test.ts) run the app's policy", () => {
    for (const f of ["stories-animals.json", "stories-cats.json"]) {
      assert.equal(loadScenario(path.join(repoRoot, "eval", "scenarios", f)).training.stepsPerRun, undefined, f);
    }
  });
});
