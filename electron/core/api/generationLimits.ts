/**
 * What a chat's generation settings may be (the defaults in Settings and each chat's own): the
 * core's schema (store/settings.ts) and the UI's form read the same numbers. Plain constants, no
 * imports, so the renderer bundles this module as it is.
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
