import { z } from "zod";
import { PREFERENCE_MAX_CHARS, PREFERENCE_STATUSES } from "../api/preferenceSchema.js";

/** The bodies of POST /api/preferences and PATCH /api/preferences/:id (the stored form: api/preferenceSchema.ts). */
export const CreatePreferenceBody = z
  .object({
    text: z.string().trim().min(1).max(PREFERENCE_MAX_CHARS),
    /** the turn it comes from: accepting a judge's hint for that turn makes a "judge" preference */
    turnId: z.string().min(1).optional(),
  })
  .strict();
export const PatchPreferenceBody = z
  .object({ text: z.string().trim().min(1).max(PREFERENCE_MAX_CHARS).optional(), status: z.enum(PREFERENCE_STATUSES).optional() })
  .strict()
  .refine((b) => b.text !== undefined || b.status !== undefined, { message: "give text and/or status" });
