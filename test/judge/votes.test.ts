import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lastBoxed, majority, parseHint, parseScore, selectHints } from "../../electron/core/judge/votes.js";

describe("judge vote parsing", () => {
  it("takes the last \\boxed{}", () => {
    assert.equal(parseScore("first I thought \\boxed{1} but no: \\boxed{-1}"), -1);
    assert.equal(parseScore("\\boxed{-1} on reflection \\boxed{0}"), 0);
    assert.equal(parseScore("progress. \\boxed{ 1 }"), 1);
    assert.equal(parseScore("\\boxed{+1}"), 1);
    assert.equal(parseScore("\\boxed{\u22121}"), -1);
  });

  it("only -1, 0, 1 are valid; a later invalid box makes the vote invalid", () => {
    assert.equal(parseScore("\\boxed{2}"), null);
    assert.equal(parseScore("\\boxed{1} then \\boxed{yes}"), null);
    assert.equal(parseScore("\\boxed{1.0}"), null);
    assert.equal(parseScore("\\boxed{}"), null);
    assert.equal(parseScore("no verdict at all"), null);
    assert.equal(parseScore("\\boxed{10}"), null);
    assert.equal(parseScore("\\boxed{-0}"), 0);
    assert.equal(Object.is(parseScore("\\boxed{-0}"), -0), false);
  });

  it("nested boxes and braces unwrap; an unclosed box at the end is ignored", () => {
    assert.equal(lastBoxed("\\boxed{\\boxed{1}}"), "1");
    assert.equal(parseScore("\\boxed{\\boxed{-1}}"), -1);
    assert.equal(parseScore("\\boxed{{0}}"), 0);
    assert.equal(parseScore("\\boxed{-1} and then \\boxed{1"), -1);
    assert.equal(lastBoxed("\\boxed{\\text{a}} x \\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
    assert.equal(parseScore("\\boxed{\\frac{1}{2}}"), null);
  });

  it("a hint vote allows only 1 and -1", () => {
    assert.equal(parseScore("\\boxed{0}", [-1, 1]), null);
    assert.equal(parseScore("\\boxed{1}", [-1, 1]), 1);
  });
});

describe("majority", () => {
  it("majority wins; invalid votes are dropped", () => {
    assert.equal(majority([1, 1, -1]).score, 1);
    assert.equal(majority([-1, null, null]).score, -1);
    assert.equal(majority([null, -1, 0, -1, 1]).score, -1);
  });

  it("a tie for the top count, or no valid vote, gives 0", () => {
    assert.equal(majority([1, -1]).score, 0);
    assert.equal(majority([1, -1, null]).score, 0);
    assert.equal(majority([1, -1, 0]).score, 0);
    assert.equal(majority([1, 1, -1, -1, 0]).score, 0);
    assert.equal(majority([null, null, null]).score, 0);
    assert.equal(majority([]).score, 0);
  });

  it("the representative is a vote that agrees with the result", () => {
    assert.equal(majority([-1, 1, 1]).representative, 1);
    assert.equal(majority([null, 0, 0]).representative, 1);
    assert.equal(majority([1, -1]).representative, -1); // tie: nobody agrees with the 0
    assert.equal(majority([1, -1, 0]).representative, 2); // tie, but a vote did say 0
    assert.deepEqual(majority([1, null, -1, 1]).counts, { "-1": 1, "0": 0, "1": 2 });
  });
});

describe("hints", () => {
  it("reads the last complete [HINT_START]…[HINT_END]", () => {
    assert.equal(parseHint("\\boxed{1} [HINT_START] Use metric units. [HINT_END]"), "Use metric units.");
    assert.equal(parseHint("[HINT_START]old[HINT_END] [HINT_START] new one [HINT_END]"), "new one");
    assert.equal(parseHint("[HINT_START] never closed"), null);
    assert.equal(parseHint("[HINT_START]   [HINT_END]"), null);
  });

  it("keeps score-1 votes with a hint over 10 characters, de-duplicated, shortest first, at most 3", () => {
    const h = (score: 1 | -1 | null, hint: string | null) => ({ score, hint });
    assert.deepEqual(
      selectHints([
        h(1, "Answer in French, the user writes in French."),
        h(1, "Be brief."), // 9 chars: too short
        h(1, "exactly10!"), // 10 chars: not longer than 10
        h(-1, "Give the total in euros."), // score -1
        h(null, "Give the total in euros please."), // invalid vote
        h(1, "Give the total in euros."),
        h(1, "give the  total in EUROS."), // duplicate (case, spaces)
        h(1, "Show the calculation step by step."),
        h(1, "Mention the deadline before anything else, since it was asked for first."),
        h(1, null),
      ]),
      ["Give the total in euros.", "Show the calculation step by step.", "Answer in French, the user writes in French."],
    );
    assert.deepEqual(selectHints([h(1, "exactly 11c")]), ["exactly 11c"]);
    assert.deepEqual(selectHints([]), []);
  });
});
