/** GET /api/preferences and the preference replies (electron/core/preferences/schema.ts is the stored form). */

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
}

export interface PreferenceReply {
  preference: Omit<PreferenceView, "contextTokens" | "inPrompt" | "overBudget">;
}
