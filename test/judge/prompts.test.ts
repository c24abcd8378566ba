import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { clip, hintMessages, prmMessages, visibleAnswer } from "../../electron/core/judge/prompts.js";

describe("judge prompts", () => {
  const input = {
    context: Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? ("assistant" as const) : ("user" as const), content: `message ${i} ${"x".repeat(300)}` })),
    answer: "The answer.",
    toolCalls: [{ name: "search", arguments: '{"q":"moon"}' }],
    nextState: [{ role: "tool" as const, content: "ERROR: bad query", tool_call_id: "c1" }],
  };

  it("keeps the newest context within the budget and says how much was left out", () => {
    const user = prmMessages(input, { context: 1000, answer: 500, nextState: 500 })[1].content as string;
    assert.match(user, /message 29 /);
    assert.doesNotMatch(user, /message 0 /);
    const left = /\[… (\d+) earlier message\(s\) left out …\]/.exec(user);
    assert.ok(left, user.slice(0, 300));
    const shown = (user.match(/message \d+ /g) ?? []).length;
    assert.equal(Number(left[1]) + shown, 30);
    // The answer's tool call and the tool result are shown.
    assert.match(user, /calls tool search with \{"q":"moon"\}/);
    assert.match(user, /\[tool result\] ERROR: bad query/);
  });

  it("a thinking model's thought is left out of the answer the judge reads (issue 32); a cut thought says so", () => {
    const thought = "<think>Maybe the user wants SECRET-REASONING here.</think>\n\nParis is the capital.";
    for (const build of [prmMessages, hintMessages]) {
      const user = build({ context: [{ role: "user", content: "Capital of France?" }], answer: thought, nextState: [] })[1].content as string;
      assert.match(user, /=== The assistant's answer ===\nParis is the capital\./);
      assert.doesNotMatch(user, /SECRET-REASONING|<think>/);
    }
    const cut = prmMessages({ context: [], answer: "<think>still going SECRET-REASONING", nextState: [] })[1].content as string;
    assert.match(cut, /cut off while the assistant was still thinking/);
    assert.doesNotMatch(cut, /SECRET-REASONING/);
    // No thought: the answer as it is.
    assert.equal(visibleAnswer("plain <think> later"), "plain <think> later");
  });

  it("a single message over budget is clipped, not dropped", () => {
    const user = prmMessages(
      { context: [{ role: "user", content: "y".repeat(5000) }], answer: "a", nextState: [] },
      { context: 800, answer: 100, nextState: 100 },
    )[1].content as string;
    assert.match(user, /characters cut/);
    assert.ok(user.length < 3000);
  });

  it("clip keeps head and tail", () => {
    const s = `HEAD${"m".repeat(1000)}TAIL`;
    const c = clip(s, 200);
    assert.ok(c.startsWith("HEAD") && c.endsWith("TAIL") && c.length <= 240);
    assert.equal(clip("short", 200), "short");
  });

  it("the PRM prompt asks for \\boxed{1|-1|0}; the hint prompt for \\boxed{1|-1} and hint markers", () => {
    const prm = prmMessages(input)[1].content as string;
    assert.match(prm, /progress[\s\S]*correction[\s\S]*ambiguous/);
    assert.match(prm, /\\boxed\{1\}[\s\S]*\\boxed\{-1\}[\s\S]*\\boxed\{0\}/);
    const hint = hintMessages(input)[1].content as string;
    assert.match(hint, /\[HINT_START\][\s\S]*\[HINT_END\]/);
    assert.doesNotMatch(hint, /\\boxed\{0\}/);
  });
});
