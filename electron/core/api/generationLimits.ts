/**
 * What a chat's generation settings may be (the defaults in Settings and each chat's own), the
 * built-in defaults, and the answer length when none is set: the core's schema
 * (api/settings.ts), its routes and the UI's chat read the same numbers and the same rule.
 * Plain constants and functions, no imports, so the renderer bundles this module as it is.
 */
export const GENERATION_LIMITS = {
  temperature: { min: 0, max: 2, step: 0.05 },
  topP: { min: 0.05, max: 1, step: 0.05 },
  /** 1 token is a real use (a one-word label); more than 32,768 is past any model we serve */
  maxTokens: { min: 1, max: 32768 },
  systemPromptChars: 8000,
  /** tool calls the chat's agent loop may make for one answer before it must answer in words */
  toolSteps: { min: 1, max: 32, default: 8 },
} as const;

/** A chat's generation settings (settings.chatDefaults, a session's `generation`); maxTokens null: defaultAnswerTokens. */
export interface ChatGeneration {
  systemPrompt: string;
  temperature: number;
  topP: number;
  maxTokens: number | null;
  toolSteps: number;
}

/** What a new chat starts with until the user sets other defaults (settings.chatDefaults's default). */
export const CHAT_DEFAULTS: Readonly<ChatGeneration> = Object.freeze({
  systemPrompt: "",
  temperature: 0.7,
  topP: 0.95,
  maxTokens: null,
  toolSteps: GENERATION_LIMITS.toolSteps.default,
});

/** settings.defaultMaxTokens's default: the answer length when a request sets none. */
export const DEFAULT_MAX_TOKENS = 2048;

/**
 * The one answer-length policy, for a request that sets no limit (the core's /v1 routes) and a
 * chat whose max tokens is "sized to the model" (the UI sends it): the defaultMaxTokens setting,
 * and no more than half the model's context, so the conversation keeps room (at least 16 tokens,
 * or the setting when that is smaller). contextSize null: not known, the setting alone.
 */
export function defaultAnswerTokens(contextSize: number | null | undefined, setting: number = DEFAULT_MAX_TOKENS): number {
  if (!contextSize || contextSize <= 0) return setting;
  return Math.max(Math.min(setting, 16), Math.min(setting, Math.floor(contextSize / 2)));
}
