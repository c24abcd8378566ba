/**
 * /api/preferences (server/routes/preferences.ts): the list, the replies of POST, PATCH, undo,
 * restore and check (DELETE answers 204, no body); api/preferenceSchema.ts is the stored form.
 */

export type PreferenceStatusView = "active" | "learned" | "disabled";

export interface PreferenceCheckView {
  at: string;
  adapter: string;
  /** mean log-prob gap per token, answer given prompt + preference vs prompt alone (nats) */
  gap: number;
  turns: number;
  threshold: number;
  verdict: "learned" | "not learned" | "forgotten" | "too few turns";
}

export interface PreferenceChangeView {
  at: string;
  by: "user" | "loop";
  kind: "created" | "text" | "status" | "turn" | "restored";
  from?: string | null;
  to?: string | null;
  reason?: string;
}

export interface PreferenceView {
  id: string;
  text: string;
  source: "user" | "judge" | "manual";
  status: PreferenceStatusView;
  createdAt: string;
  updatedAt: string;
  turnIds: string[];
  learnedAt?: string;
  lastCheck?: PreferenceCheckView;
  history: PreferenceChangeView[];
  /** prompt tokens its line costs while active; null when no model is served */
  contextTokens: number | null;
  /** in the block main turns get now; null when no model is served */
  inPrompt: boolean | null;
  /** active but left out: the token budget is spent on newer ones */
  overBudget: boolean;
}

export interface PreferencesReply {
  preferences: PreferenceView[];
  /** deleted ones, restorable */
  deleted: PreferenceView[];
  block: { enabled: boolean; outsideClients: boolean; budget: number; text: string; tokens: number | null; ids: string[] };
  /** a judge's hint that recurs becomes a preference (setting preferencesFromJudge) */
  fromJudge: boolean;
}

/** POST /api/preferences (201), PATCH /api/preferences/:id, POST /api/preferences/:id/undo and /restore: the preference as stored now. */
export interface PreferenceReply {
  preference: Omit<PreferenceView, "contextTokens" | "inPrompt" | "overBudget">;
}

/** One preference's outcome of a retirement check (preferences/retire.ts CheckResult). */
export interface PreferenceCheckResultView {
  id: string;
  text: string;
  /** its status after the check */
  status: PreferenceStatusView;
  verdict: PreferenceCheckView["verdict"];
  /** null: not measured (too few turns) */
  gap: number | null;
  turns: number;
  reason: string;
}

/** POST /api/preferences/check: each checked preference's outcome, and the list as GET gives it after the check. */
export interface PreferenceCheckReply extends PreferencesReply {
  results: PreferenceCheckResultView[];
}
