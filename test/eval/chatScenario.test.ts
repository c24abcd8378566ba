import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { runEval } from "../../electron/core/eval/runner.js";
import { startCore } from "../../electron/core/core.js";
import { loadScenario } from "../../electron/core/eval/scenario.js";
import { repoRoot, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

/**
 * The chat scenario's mechanics on the tiny qwen2 model (random weights: the scores mean
 * nothing): chat template, explicit thumbs and hints, and the user's next message recorded as
 * the turn's next state in the same session (what the judge reads), through the real core.
 */
describe("eval: chat scenario mechanics on the tiny model", () => {
  it("reacts with thumbs, hints and next messages, and records next states", async () => {
    const file = path.join(repoRoot, "eval", "scenarios", "chat-short-answers.json");
    const base = loadScenario(file);
    // Score few answers: mechanics only.
    const scenario = { ...base, heldOutPrompts: base.heldOutPrompts.slice(0, 2), samplesPerPrompt: 1, seeds: [1] };
    const out = tempDir("clawrl-eval-chat-");
    const model = await tinyModel({ arch: "qwen2" });
    const report = await runEval({
      scenario,
      scenarioFile: file,
      model,
      methods: ["combined"],
      interactions: 2,
      outDir: out,
      engine: { threads: 1, backend: "cpu" },
      startCore,
    });
    const run = report.runs[1];
    assert.equal(run.method, "combined");
    const r = run.reactions;
    assert.equal(r.up + r.next, 2, `each answer is short (thumbs up) or long (next message): ${JSON.stringify(r)}`);
    assert.equal(r.hint, r.next, "long answers also get the hint");
    assert.deepEqual(
      run.points.map((p) => p.interactions),
      [0, 2],
    );
    // In the run's log: each long answer's turn has the user's complaint as its next state.
    const lines = fs
      .readFileSync(run.logPath!, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; messages?: Array<{ content: string }> });
    const nextStates = lines.filter((l) => l.kind === "next_state");
    assert.equal(nextStates.length, r.next);
    for (const n of nextStates) assert.match(JSON.stringify(n.messages), /far too long/);
    const turns = lines.filter((l) => l.kind === "turn");
    assert.ok(
      turns.some((t) => JSON.stringify(t.messages).includes("Answer briefly.")),
      "the template's system message was sent",
    );
  });
});
