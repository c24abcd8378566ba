import type { EventBus } from "../rollout/events.js";
import type { Store } from "../store/store.js";
import { preferenceKey, preferenceTextOf, type PreferenceService } from "./service.js";

/**
 * Every hint the user gives on a turn becomes a preference at once, so the next answer already
 * follows it (and the hint still trains that turn as before). Editing the hint edits the
 * preference it made; withdrawing it disables that preference. A preference other turns' hints
 * also made (the same text) is left as it is.
 */
export function preferencesFromHints(bus: EventBus, prefs: PreferenceService): () => void {
  return bus.on("feedback", ({ turnId, feedback }) => {
    const hint = feedback?.hint?.trim() ? feedback.hint : null;
    const own = prefs.ofTurn(turnId).filter((p) => p.source === "user" && p.turnIds.length === 1);
    if (hint === null) {
      for (const p of own) if (p.status === "active") prefs.patch(p.id, { status: "disabled" });
      return;
    }
    const text = preferenceTextOf(hint);
    if (own.length > 0) {
      const p = own[0];
      if (p.text !== text || p.status === "disabled") prefs.patch(p.id, { text, ...(p.status === "disabled" ? { status: "active" as const } : {}) });
      return;
    }
    prefs.create(text, "user", [turnId]);
  });
}

/** How many recent turns must carry the same judge's hint before it becomes a preference. */
export const JUDGE_HINT_RECURRENCE = 2;
/** How many of the newest judged turns a recurrence is looked for in. */
const JUDGE_HINT_LOOKBACK = 200;

/** A judged turn's hints, each with its key (preferenceKey). */
interface JudgedHints {
  turnId: string;
  hints: Array<{ key: string; text: string }>;
}

/**
 * A hint the judge read from the user's next message is a guess; said again about another turn it
 * is a pattern. When the same hint (preferenceKey: its words in order) is among the judge's hints of
 * JUDGE_HINT_RECURRENCE of the newest judged turns, it becomes a preference (source "judge")
 * with those turns, in the words it was first said in; one that exists already gains the turn.
 * Off with the setting preferencesFromJudge. The newest judged turns' hints are read from the log
 * once, then kept as verdicts arrive.
 */
export function preferencesFromJudgeHints(bus: EventBus, prefs: PreferenceService, store: Store): () => void {
  const hintsOf = (turnId: string): JudgedHints => ({
    turnId,
    hints: (store.readJudge(turnId)?.hints ?? []).map((text) => ({ key: preferenceKey(text), text })),
  });
  let recent: JudgedHints[] | null = null;
  return bus.on("judge", ({ turnId }) => {
    if (!store.settings.preferencesFromJudge) {
      recent = null; // verdicts go unseen while off: read the log again when it is back on
      return;
    }
    if (recent === null)
      recent = [...store.turnEntries()]
        .filter((e) => e.judge)
        .slice(-JUDGE_HINT_LOOKBACK)
        .map((e) => hintsOf(e.turnId));
    else recent = [...recent.filter((r) => r.turnId !== turnId), hintsOf(turnId)].slice(-JUDGE_HINT_LOOKBACK);
    const mine = recent.find((r) => r.turnId === turnId);
    for (const key of new Set(mine?.hints.map((h) => h.key) ?? [])) {
      const existing = prefs.list().find((p) => preferenceKey(p.text) === key);
      if (existing) {
        if (!existing.turnIds.includes(turnId)) prefs.create(existing.text, existing.source, [turnId]);
        continue;
      }
      const said = recent.filter((r) => r.hints.some((h) => h.key === key));
      if (said.length >= JUDGE_HINT_RECURRENCE)
        prefs.create(
          said[0].hints.find((h) => h.key === key)!.text,
          "judge",
          said.map((r) => r.turnId),
        );
    }
  });
}
