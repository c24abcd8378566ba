/**
 * The settings schema with its defaults (GET|PATCH /api/settings), one source: the schema is
 * defined in store/settings.ts (which imports only zod, the LoRA defaults and
 * ./generationLimits.ts) and re-exported here as the contract. The renderer imports the types
 * only; the settings' values reach it through GET /api/settings, the chat's built-in defaults
 * through generationLimits.ts CHAT_DEFAULTS.
 */
export { SettingsSchema, JudgeSourceSchema, defaultSettings, KL_BETA_DEFAULT, HELD_BACK_DEFAULT } from "../store/settings.js";
export type { Settings, JudgeSource } from "../store/settings.js";
