/**
 * Generation settings: the defaults (Settings page; the core keeps them, settings.chatDefaults)
 * and each chat's own (chat header; the core keeps them with the chat's session, `generation`).
 * Sent with every chat request; the system prompt goes as the first message, so the core records
 * it in the turn (and trains on it) as a real client's.
 */
import type { GenerationView } from "../../../electron/core/api/sessions.js";
import { GENERATION_LIMITS } from "../../../electron/core/api/generationLimits.js";
import type { CoreClient } from "./client.js";

/** System prompt, temperature, top-p and max tokens (null: sized to the served model, defaultMaxTokens). */
export type GenerationSettings = GenerationView;

export const builtInGeneration: GenerationSettings = { systemPrompt: "", temperature: 0.7, topP: 0.95, maxTokens: null, toolSteps: GENERATION_LIMITS.toolSteps.default };

/**
 * Answer length when none is set: a chat answer rarely needs more than ~1,000 tokens, and it
 * must leave room for the conversation in the model's context (half of it at most).
 */
export function defaultMaxTokens(contextSize: number | null): number {
  const ctx = contextSize ?? 4096;
  return Math.max(16, Math.min(1024, Math.floor(ctx / 2)));
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

/** GET /api/settings's chatDefaults (the built-in ones from a core that has none). */
export function readChatDefaults(settings: unknown): GenerationSettings {
  const v = typeof settings === "object" && settings !== null ? (settings as { chatDefaults?: unknown }).chatDefaults : undefined;
  return readGeneration(v);
}

/** Stores a chat's own settings with its session in the core (null: it follows the defaults again). */
export async function saveChat(client: CoreClient, sessionId: string, g: GenerationSettings | null): Promise<void> {
  await client.patch(`/api/sessions/${encodeURIComponent(sessionId)}`, { generation: g });
}

/** The request fields for these settings (OpenAI names). */
export function requestParams(g: GenerationSettings, contextSize: number | null): { temperature: number; top_p: number; max_tokens: number } {
  return { temperature: g.temperature, top_p: g.topP, max_tokens: g.maxTokens ?? defaultMaxTokens(contextSize) };
}
