/**
 * Generation settings: the defaults (Settings page; the core keeps them, settings.chatDefaults)
 * and each chat's own (chat header; the core keeps them with the chat's session, `generation`).
 * Sent with every chat request; the system prompt goes as the first message, so the core records
 * it in the turn (and trains on it) as a real client's.
 */
import { CHAT_DEFAULTS, defaultAnswerTokens, GENERATION_LIMITS, type ChatGeneration } from "../../../electron/core/api/generationLimits.js";
import type { Settings } from "../../../electron/core/api/settings.js";
import type { CoreClient } from "./client.js";

/** System prompt, temperature, top-p, max tokens (null: sized to the served model, defaultAnswerTokens) and tool steps. */
export type GenerationSettings = ChatGeneration;

/** The contract's built-in chat defaults (what the core's settings start with). */
export const builtInGeneration: GenerationSettings = CHAT_DEFAULTS;

/** Answer length when none is set: the contract's one policy (the core applies it to a request without a limit). */
export function defaultMaxTokens(contextSize: number | null): number {
  return defaultAnswerTokens(contextSize);
}

export const limits = GENERATION_LIMITS;

/** Where this browser kept a chat's own settings before the core kept them (read once, then moved). */
const legacyChatKey = (sessionId: string) => `clawrl.generation.chat.${sessionId}`;

function clamp(v: unknown, min: number, max: number, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : fallback;
}

/** Whatever was stored, made valid (unknown fields dropped, numbers clamped). */
export function readGeneration(v: unknown, base: GenerationSettings = builtInGeneration): GenerationSettings {
  const o = typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};
  const max = o.maxTokens;
  return {
    systemPrompt: typeof o.systemPrompt === "string" ? o.systemPrompt.slice(0, limits.systemPromptChars) : base.systemPrompt,
    temperature: clamp(o.temperature, limits.temperature.min, limits.temperature.max, base.temperature),
    topP: clamp(o.topP, limits.topP.min, limits.topP.max, base.topP),
    maxTokens: max === null ? null : typeof max === "number" ? Math.round(clamp(max, limits.maxTokens.min, limits.maxTokens.max, 0)) || null : base.maxTokens,
    toolSteps: Math.round(clamp(o.toolSteps, limits.toolSteps.min, limits.toolSteps.max, base.toolSteps)),
  };
}

/**
 * A chat's own settings that this browser kept before the core did, removed from the browser as
 * they are read (the caller stores them with the session); undefined when there are none.
 */
export function takeLegacyChat(sessionId: string): unknown {
  try {
    const key = legacyChatKey(sessionId);
    const t = localStorage.getItem(key);
    if (t === null) return undefined;
    localStorage.removeItem(key);
    return JSON.parse(t) as unknown;
  } catch {
    return undefined; // storage off or garbled: nothing to move
  }
}

/** GET /api/settings's chatDefaults. */
export function readChatDefaults(settings: Pick<Settings, "chatDefaults">): GenerationSettings {
  return settings.chatDefaults;
}

/** Stores a chat's own settings with its session in the core (null: it follows the defaults again). */
export async function saveChat(client: CoreClient, sessionId: string, g: GenerationSettings | null): Promise<void> {
  await client.patch(`/api/sessions/${encodeURIComponent(sessionId)}`, { generation: g });
}

/** The request fields for these settings (OpenAI names). */
export function requestParams(g: GenerationSettings, contextSize: number | null): { temperature: number; top_p: number; max_tokens: number } {
  return { temperature: g.temperature, top_p: g.topP, max_tokens: g.maxTokens ?? defaultMaxTokens(contextSize) };
}
