import type { EventBus } from "../rollout/events.js";
import type { Store } from "../store/store.js";
import { preferenceTextOf, type PreferenceService } from "./service.js";

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

const norm = (s: string) => preferenceTextOf(s).replace(/\s+/g, " ").trim().toLowerCase();

/**
 * A hint the judge read from the user's next message is a guess; said again about another turn it
 * is a pattern. When the same hint (case and spacing aside) is among the judge's hints of
 * JUDGE_HINT_RECURRENCE of the newest judged turns, it becomes a preference (source "judge")
 * with those turns; one that exists already gains the turn. Off with the setting
 * preferencesFromJudge.
 */
export function preferencesFromJudgeHints(bus: EventBus, prefs: PreferenceService, store: Store): () => void {
  return bus.on("judge", ({ turnId }) => {
    if (!store.settings.preferencesFromJudge) return;
    const hints = store.readJudge(turnId)?.hints ?? [];
    if (hints.length === 0) return;
    const wanted = new Map(hints.map((h) => [norm(h), h] as const));
    const seen = new Map<string, string[]>([...wanted.keys()].map((k) => [k, [turnId]]));
    const judged = [...store.turnEntries()].filter((e) => e.judge && e.turnId !== turnId).slice(-JUDGE_HINT_LOOKBACK);
    // The words it was first said in (the oldest turn's).
    const firstSaid = new Map<string, string>();
    for (const e of judged) {
      for (const h of store.readJudge(e.turnId)?.hints ?? []) {
        const turns = seen.get(norm(h));
        if (!turns) continue;
        turns.push(e.turnId);
        if (!firstSaid.has(norm(h))) firstSaid.set(norm(h), h);
      }
    }
    for (const [key, turns] of seen) {
      const existing = prefs.list().find((p) => norm(p.text) === key);
      if (existing) {
        if (!existing.turnIds.includes(turnId)) prefs.create(existing.text, existing.source, [turnId]);
      } else if (new Set(turns).size >= JUDGE_HINT_RECURRENCE) {
        prefs.create(firstSaid.get(key) ?? wanted.get(key)!, "judge", [...new Set(turns.slice(1)), turnId]);
      }
    }
  });
}
