/**
 * The prompts the gate's fluency check picks (evalSets.ts probePrompts): a stable sample of the
 * recent turns, so that the base answers sampled ahead for them are still wanted when the run's
 * gate asks, after more turns came in.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Store } from "../../electron/core/store/store.js";
import { PROBE_PICK_WINDOW, probePrompts } from "../../electron/core/training/evalSets.js";
import { preTreeDataDir, T, UI } from "../store/fixtures/preTree.js";

/** The picks as prompt keys (one per prompt: `samples` 1). */
const picks = (store: Store): string[] => probePrompts(store, 8, 1, 64).map((p) => p.tokens.join(","));

describe("the gate's fluency prompts", () => {
  it("are the same prompts with the same seeds for the same conversation under other turn ids (an eval course replayed)", () => {
    const run = (prefix: string) => {
      const store = Store.open(preTreeDataDir());
      try {
        const rec = store.readTurn(T.d);
        let parent = T.d;
        for (let i = 0; i < 40; i++) {
          const turnId = `${prefix}-${i}`;
          store.appendTurn({ ...rec, turnId, index: store.nextTurnIndex(UI), promptTokens: [7000 + i], prefixKey: `${prefix}-k-${i}`, parentTurnId: parent });
          parent = turnId;
        }
        return probePrompts(store, 8, 2, 64).map((p) => ({ tokens: p.tokens.join(","), seed: p.seed }));
      } finally {
        store.close();
      }
    };
    const a = run("first");
    assert.equal(a.length, 16);
    assert.deepEqual(run("second"), a);
  });

  it("stay mostly the same while turns come in, unlike the newest 8, and come from the newest turns", () => {
    const store = Store.open(preTreeDataDir());
    try {
      const rec = store.readTurn(T.d);
      const ids: string[] = [];
      const history: string[][] = [];
      for (let i = 0; i < 60; i++) {
        const turnId = `feed-${i}`;
        // Unrated turns: none is held back, so all 8 picks come from the recent turns.
        store.appendTurn({ ...rec, turnId, index: store.nextTurnIndex(UI), promptTokens: [5000 + i], prefixKey: `k-${i}`, parentTurnId: ids.at(-1) ?? T.d });
        ids.push(turnId);
        history.push(picks(store));
      }
      // After 4 more turns (a minute of a quick chat), how many of the 8 picks are the same.
      let kept = 0;
      let looks = 0;
      for (let i = 40; i + 4 < history.length; i++) {
        const later = new Set(history[i + 4]);
        kept += history[i].filter((k) => later.has(k)).length;
        looks++;
      }
      assert.ok(kept / looks >= 6, `${(kept / looks).toFixed(2)} of 8 picks kept after 4 turns (the newest 8 would keep 4: 4 new turns push out the 4 oldest)`);
      history.forEach((h, newest) => {
        if (newest < PROBE_PICK_WINDOW) return;
        assert.equal(new Set(h).size, 8, "8 distinct prompts");
        for (const k of h)
          assert.ok(
            Number(k) - 5000 > newest - PROBE_PICK_WINDOW,
            `pick ${Number(k) - 5000} is among the newest ${PROBE_PICK_WINDOW} turns (the newest is ${newest})`,
          );
      });
      console.log(`picks kept after 4 more turns: ${(kept / looks).toFixed(2)} of 8 (the newest 8: 4)`);
    } finally {
      store.close();
    }
  });
});
