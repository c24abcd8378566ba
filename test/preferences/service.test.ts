import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { EventBus } from "../../electron/core/rollout/events.js";
import { Store } from "../../electron/core/store/store.js";
import { preferencesFromHints } from "../../electron/core/preferences/fromHints.js";
import { PreferenceService } from "../../electron/core/preferences/service.js";
import type { PreferenceCheck } from "../../electron/core/api/preferenceSchema.js";
import { tempDir } from "../helpers/cli.js";

describe("preferences: hints, the loop's changes, undo, persistence", () => {
  const dir = tempDir("clawrl-pref-svc-");
  const store = Store.open(dir);
  const bus = new EventBus();
  const prefs = new PreferenceService(store, bus);
  const off = preferencesFromHints(bus, prefs);
  after(() => {
    off();
    store.close();
  });
  const hint = (turnId: string, text: string | null) =>
    bus.emit("feedback", { turnId, sessionId: "s", feedback: { thumbs: "down", hint: text, time: new Date().toISOString() } });

  it("a hint makes a preference; editing the hint edits it, withdrawing it disables it, giving it again enables it", () => {
    hint("t1", "Be   brief.");
    assert.deepEqual(
      prefs.list().map((p) => [p.text, p.source, p.status, p.turnIds]),
      [["Be brief.", "user", "active", ["t1"]]],
    );
    hint("t1", "Be very brief.");
    assert.equal(prefs.list()[0].text, "Be very brief.");
    hint("t1", null);
    assert.equal(prefs.list()[0].status, "disabled");
    hint("t1", "Be very brief.");
    assert.equal(prefs.list()[0].status, "active");
    // The same words on another turn join it.
    hint("t2", "be very brief.");
    assert.deepEqual(
      prefs.list().map((p) => p.turnIds),
      [["t1", "t2"]],
    );
  });

  it("the loop retires and brings back with its reason; the same hint given again brings a learned one back; undo reverts the last status change", () => {
    const id = prefs.list()[0].id;
    const check: PreferenceCheck = { at: new Date().toISOString(), adapter: "ckpt-1", gap: 0.01, turns: 5, threshold: 0.05, verdict: "learned" };
    const learned = prefs.setByLoop(id, "learned", "learned: gap 0.010", check);
    assert.deepEqual([learned.status, learned.lastCheck?.gap, typeof learned.learnedAt], ["learned", 0.01, "string"]);
    assert.deepEqual(learned.history.at(-1), {
      at: learned.updatedAt,
      by: "loop",
      kind: "status",
      from: "active",
      to: "learned",
      reason: "learned: gap 0.010",
    });
    hint("t3", "Be very brief.");
    const back = prefs.get(id);
    assert.deepEqual([back.status, back.learnedAt, back.history.at(-1)?.reason], ["active", undefined, "the same hint was given again"]);
    assert.equal(prefs.undo(id).status, "learned");
  });

  it("is kept in state.json across a restart", () => {
    store.flush();
    const again = Store.open(dir, { readOnly: true });
    try {
      assert.deepEqual(again.state.preferences, store.state.preferences);
    } finally {
      again.close();
    }
  });
});
