import type { EventBus } from "../rollout/events.js";
import type { Rollout } from "../rollout/rollout.js";
import type { Store } from "../store/store.js";
import { preferencesFromHints, preferencesFromJudgeHints } from "./fromHints.js";
import { blockForTurn } from "./inject.js";
import { PreferenceService } from "./service.js";

export { PreferenceService } from "./service.js";

/**
 * Preferences in a running core: the list (state.json), hints turned into preferences, and the
 * block main turns get (the rollout asks before each request renders its prompt).
 */
export function startPreferences(store: Store, bus: EventBus, rollout: Rollout): { service: PreferenceService; close(): void } {
  const service = new PreferenceService(store, bus);
  const offHints = preferencesFromHints(bus, service);
  const offJudge = preferencesFromJudgeHints(bus, service, store);
  rollout.usePreferences((turn, countTokens) => blockForTurn(store.settings, service, turn, countTokens));
  return {
    service,
    close: () => {
      offHints();
      offJudge();
      rollout.usePreferences(null);
    },
  };
}
