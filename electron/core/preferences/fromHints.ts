import type { EventBus } from "../rollout/events.js";
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
