import type { Settings } from "../api/settings.js";

/**
 * Secrets in the settings (the judge endpoint's API key; later, MCP servers' env) never leave
 * the core: every reply and event carries them masked, and a PATCH that sends a masked value
 * back keeps the stored one. This module is the one place that knows which fields are secret.
 */

/** `sk-…4242`: enough for the user to recognise the key, not enough to use it. */
export function maskSecret(secret: string): string {
  return secret.length >= 12 ? `${secret.slice(0, 3)}…${secret.slice(-4)}` : "…";
}

/** The settings as the API shows them: secrets masked. */
export function publicSettings(settings: Settings): Settings {
  const j = settings.judgeSource;
  if (j.kind !== "endpoint" || j.apiKey === undefined) return settings;
  return { ...settings, judgeSource: { ...j, apiKey: maskSecret(j.apiKey) } };
}

/**
 * A settings patch with each masked secret that came back (the UI edits what GET returned)
 * replaced by the stored secret it stands for, so saving the form does not overwrite the key.
 */
export function restoreMaskedSecrets(current: Settings, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const p = patch as { judgeSource?: unknown };
  const j = p.judgeSource as { kind?: unknown; apiKey?: unknown } | undefined;
  const stored = current.judgeSource.kind === "endpoint" ? current.judgeSource.apiKey : undefined;
  if (stored === undefined || typeof j !== "object" || j === null || j.kind !== "endpoint" || j.apiKey !== maskSecret(stored)) return patch;
  return { ...p, judgeSource: { ...j, apiKey: stored } };
}
