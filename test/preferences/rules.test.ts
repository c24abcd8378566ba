import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BLOCK_HEADER, planBlock, plainPrefix, withBlock } from "../../electron/core/preferences/block.js";
import { verdictOf } from "../../electron/core/preferences/retire.js";
import type { Preference } from "../../electron/core/api/preferenceSchema.js";

const pref = (id: string, text: string, createdAt: string): Preference => ({
  id,
  text,
  source: "user",
  status: "active",
  createdAt,
  updatedAt: createdAt,
  turnIds: [],
  history: [],
});
const words = (t: string) => t.split(/\s+/).length;

describe("preference block", () => {
  it("takes the newest that fit the budget and lists them oldest first", () => {
    const a = pref("a", "Answer in French.", "2026-01-01T00:00:00.000Z");
    const b = pref("b", "Use metric units in every answer you give.", "2026-01-02T00:00:00.000Z");
    const c = pref("c", "Be brief.", "2026-01-03T00:00:00.000Z");
    const all = planBlock([a, b, c], 100, words);
    assert.deepEqual(all.ids, ["a", "b", "c"]);
    assert.equal(all.text, `${BLOCK_HEADER}\n- Answer in French.\n- Use metric units in every answer you give.\n- Be brief.`);
    // header 10 words + 1; c costs 4, b 10, a 5: a budget of 21 fits c and a, not b.
    const tight = planBlock([a, b, c], 21, words);
    assert.deepEqual([tight.ids, tight.overBudget], [["a", "c"], ["b"]]);
    assert.deepEqual(planBlock([], 100, words), { text: "", ids: [], tokens: 0, overBudget: [] });
  });

  it("goes into the first system message, or a system message of its own; plain prompts get a paragraph", () => {
    const user = { role: "user" as const, content: "hi" };
    assert.deepEqual(withBlock([user], "B"), [{ role: "system", content: "B" }, user]);
    assert.deepEqual(withBlock([{ role: "system", content: "S" }, user], "B"), [{ role: "system", content: "S\n\nB" }, user]);
    assert.deepEqual(withBlock([{ role: "developer", content: [{ type: "text", text: "S" }] }, user], "B")[0].content, [
      { type: "text", text: "S" },
      { type: "text", text: "\n\nB" },
    ]);
    assert.equal(plainPrefix("B"), "B\n\n");
  });
});

describe("retirement verdicts", () => {
  const s = { threshold: 0.1, minTurns: 3 };
  const m = (gap: number, turns = 5, adapter = "ckpt-2") => ({ gap, turns, tokens: turns * 10, adapter });
  it("retires an active preference below the threshold, not on the base model, not with too few turns", () => {
    assert.equal(verdictOf("active", m(0.05), s)?.next, "learned");
    assert.equal(verdictOf("active", m(0.05, 5, "base"), s)?.next, null);
    assert.equal(verdictOf("active", m(0.2), s)?.check.verdict, "not learned");
    assert.equal(verdictOf("active", m(0.01, 2), s)?.check.verdict, "too few turns");
    assert.equal(verdictOf("active", null, s)?.check.verdict, "too few turns");
    assert.equal(verdictOf("disabled", m(0.01), s), null);
  });
  it("brings a learned preference back only when clearly forgotten (above twice the threshold)", () => {
    assert.equal(verdictOf("learned", m(0.15), s)?.next, null);
    const v = verdictOf("learned", m(0.25), s);
    assert.deepEqual([v?.next, v?.check.verdict], ["active", "forgotten"]);
    assert.match(v!.reason, /^forgotten: gap 0\.250/);
  });
});
