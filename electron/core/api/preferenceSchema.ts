import { z } from "zod";

/**
 * A preference: a short standing instruction from the user ("answer in French"), made from a
 * hint or written by hand. While `active` it is rendered into the system prompt of main turns
 * (block.ts) and distilled into the adapter (context distillation, rollout/samples.ts); once the
 * adapter alone behaves as with it (retire.ts) it becomes `learned` and leaves the prompt.
 * Stored in state.json (lowdb, atomic writes) and validated there with this schema
 * (store/state.ts); the `preferences` event sends it as stored, and api/preferences.ts's views
 * extend it. Part of the contract: electron/core/preferences/ and the store import it from here.
 */
export const PREFERENCE_STATUSES = ["active", "learned", "disabled"] as const;
export type PreferenceStatus = (typeof PREFERENCE_STATUSES)[number];

/** Longest preference text (characters): a preference is a sentence or two, not a document. */
export const PREFERENCE_MAX_CHARS = 500;

/** The latest retirement check of a preference (retire.ts). */
export const PreferenceCheckSchema = z.object({
  at: z.string(),
  /** adapter version measured ("base" when none) */
  adapter: z.string(),
  /** mean per-token log-prob gap, answer given prompt + this preference vs prompt alone (nats/token) */
  gap: z.number(),
  /** held-back turns measured */
  turns: z.int().nonnegative(),
  threshold: z.number(),
  verdict: z.enum(["learned", "not learned", "forgotten", "too few turns"]),
});
export type PreferenceCheck = z.infer<typeof PreferenceCheckSchema>;

/** One change, newest last: what the Preferences page lists and what undo reverts. */
export const PreferenceChangeSchema = z.object({
  at: z.string(),
  /** who made it: the user (API, UI, a hint) or the learning loop (retirement, forgetting) */
  by: z.enum(["user", "loop"]),
  kind: z.enum(["created", "text", "status", "turn", "restored"]),
  from: z.string().nullable().optional(),
  to: z.string().nullable().optional(),
  reason: z.string().optional(),
});
export type PreferenceChange = z.infer<typeof PreferenceChangeSchema>;

export const PreferenceSchema = z.object({
  id: z.string().min(1),
  text: z.string().min(1).max(PREFERENCE_MAX_CHARS),
  source: z.enum(["user", "judge", "manual"]),
  status: z.enum(PREFERENCE_STATUSES),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** the turns whose hints made it (oldest first) */
  turnIds: z.array(z.string()),
  learnedAt: z.string().optional(),
  lastCheck: PreferenceCheckSchema.optional(),
  history: z.array(PreferenceChangeSchema),
});
export type Preference = z.infer<typeof PreferenceSchema>;
