/**
 * Changes to the user's settings: the schema and its defaults are the contract's
 * (api/settings.ts); this applies a PATCH to the stored ones and names the first bad field.
 */
import type { z } from "zod";
import { SettingsSchema, type Settings } from "../api/settings.js";

/** Applies a partial change; throws SettingsError naming the first bad field. */
export function applySettingsPatch(current: Settings, patch: unknown): Settings {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) throw new SettingsError("settings must be a JSON object");
  const r = SettingsSchema.safeParse({ ...current, ...patch });
  if (!r.success) throw new SettingsError(formatIssue(r.error.issues[0]));
  return r.data;
}

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SettingsError";
  }
}

export function formatIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.join(".") : "";
  if (issue.code === "unrecognized_keys")
    return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${[where, k].filter(Boolean).join(".")}'`).join(", ")}`;
  return `${where ? `'${where}': ` : ""}${issue.message}`;
}
