import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { EventBus } from "../../electron/core/rollout/events.js";
import { Store } from "../../electron/core/store/store.js";
import { JUDGE_HINT_RECURRENCE, preferencesFromJudgeHints } from "../../electron/core/preferences/fromHints.js";
import { PreferenceService } from "../../electron/core/preferences/service.js";
import { tempDir } from "../helpers/cli.js";

/** A judge's hint is a guess about one turn; the same hint on another turn makes a preference. */
describe("preferences from the judge's recurring hints", () => {
  const store = Store.open(tempDir("clawrl-pref-judge-"));
  const bus = new EventBus();
  const prefs = new PreferenceService(store, bus);
  const off = preferencesFromJudgeHints(bus, prefs, store);
  after(() => {
    off();
    store.close();
  });
  let n = 0;
  /** A recorded main turn the judge gave `hints`, announced as the judge service does. */
  function judged(hints: string[]): string {
    const turnId = `t${++n}`;
    const time = new Date().toISOString();
    store.appendTurn({
      turnId,
      sessionId: "s",
      index: n - 1,
      type: "main",
      startedAt: time,
      time,
      fromUi: false,
      model: "m",
      adapter: "base",
      messages: [{ role: "user", content: `question ${n}` }],
      promptTokens: [1, 2, 3],
      responseTokens: [4],
      tokenLogprobs: [-0.5],
      text: `answer ${n}`,
      finishReason: "stop",
      sampling: { temperature: 1, topP: 1 },
      sessionDone: false,
      prefixKey: `k${n}`,
    });
    store.appendJudge({ turnId, reward: -1, votes: [], hints, representative: null, judge: "test" });
    bus.emit("judge", { turnId, sessionId: "s", reward: -1 });
    return turnId;
  }

  it("makes nothing of a hint said once", () => {
    assert.equal(JUDGE_HINT_RECURRENCE, 2);
    judged(["Answer in one sentence."]);
    judged(["Use metric units."]);
    judged([]);
    assert.deepEqual(prefs.list(), []);
  });

  it("makes a judge preference, with both turns, when the same hint (case, spacing, punctuation and please aside) comes back", () => {
    const t = judged(["please, answer in  one sentence", "Say please."]);
    assert.deepEqual(
      prefs.list().map((p) => [p.text, p.source, p.status, p.turnIds]),
      [["Answer in one sentence.", "judge", "active", ["t1", t]]],
    );
  });

  it("keeps the words' order: the same words saying the opposite are two hints", () => {
    judged(["Answer in French, not English."]);
    judged(["Answer in English, not French."]);
    assert.equal(prefs.list().length, 1);
  });

  it("adds later turns to it, and leaves it disabled when the user disabled it", () => {
    const id = prefs.list()[0].id;
    prefs.patch(id, { status: "disabled" });
    const t = judged(["Answer in one sentence."]);
    const p = prefs.get(id);
    assert.deepEqual([p.status, p.turnIds.at(-1), prefs.list().length], ["disabled", t, 1]);
  });

  it("does nothing with the setting off", () => {
    store.updateState((d) => {
      d.settings = { ...d.settings, preferencesFromJudge: false };
    });
    judged(["Use metric units."]);
    assert.equal(prefs.list().length, 1);
  });
});
