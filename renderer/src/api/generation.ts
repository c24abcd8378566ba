/**
 * Generation settings: the defaults (Settings page; the core keeps them, settings.chatDefaults)
 * and each chat's own (chat header; this browser's storage). Sent with every chat request; the
 * system prompt goes as the first message, so the core records it in the turn (and trains on
 * it) as a real client's.
 */
export interface GenerationSettings {
  systemPrompt: string;
  temperature: number;
  topP: number;
  /** null: sized to the served model (defaultMaxTokens) */
  maxTokens: number | null;
}

export const builtInGeneration: GenerationSettings = { systemPrompt: "", temperature: 0.7, topP: 0.95, maxTokens: null };

/**
 * Answer length when none is set: a chat answer rarely needs more than ~1,000 tokens, and it
 * must leave room for the conversation in the model's context (half of it at most).
 */
export function defaultMaxTokens(contextSize: number | null): number {
  const ctx = contextSize ?? 4096;
  return Math.max(16, Math.min(1024, Math.floor(ctx / 2)));
}

export const limits = {
  temperature: { min: 0, max: 2, step: 0.05 },
  topP: { min: 0.05, max: 1, step: 0.05 },
  maxTokens: { min: 16, max: 32768 },
} as const;

const chatKey = (sessionId: string) => `clawrl.generation.chat.${sessionId}`;

function clamp(v: unknown, min: number, max: number, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : fallback;
}

/** Whatever was stored, made valid (unknown fields dropped, numbers clamped). */
export function readGeneration(v: unknown, base: GenerationSettings = builtInGeneration): GenerationSettings {
  const o = typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};
  const max = o.maxTokens;
  return {
    systemPrompt: typeof o.systemPrompt === "string" ? o.systemPrompt.slice(0, 8000) : base.systemPrompt,
    temperature: clamp(o.temperature, limits.temperature.min, limits.temperature.max, base.temperature),
    topP: clamp(o.topP, limits.topP.min, limits.topP.max, base.topP),
    maxTokens: max === null ? null : typeof max === "number" ? Math.round(clamp(max, limits.maxTokens.min, limits.maxTokens.max, 0)) || null : base.maxTokens,
  };
}

function load(key: string): unknown {
  try {
    const t = localStorage.getItem(key);
    return t ? (JSON.parse(t) as unknown) : undefined;
  } catch {
    return undefined; // storage off or garbled: defaults
  }
}

function save(key: string, g: GenerationSettings | null): void {
  try {
    if (g === null) localStorage.removeItem(key);
    else localStorage.setItem(key, JSON.stringify(g));
  } catch {
    // not remembered beyond this page
  }
}

/** GET /api/settings's chatDefaults (the built-in ones from a core that has none). */
export function readChatDefaults(settings: unknown): GenerationSettings {
  const v = typeof settings === "object" && settings !== null ? (settings as { chatDefaults?: unknown }).chatDefaults : undefined;
  return readGeneration(v);
}

/** A chat's own settings, or null when it follows the defaults. */
export function loadChat(sessionId: string, defaults: GenerationSettings): GenerationSettings | null {
  const v = load(chatKey(sessionId));
  return v === undefined ? null : readGeneration(v, defaults);
}

export function saveChat(sessionId: string, g: GenerationSettings | null): void {
  save(chatKey(sessionId), g);
}

/** The request fields for these settings (OpenAI names). */
export function requestParams(g: GenerationSettings, contextSize: number | null): { temperature: number; top_p: number; max_tokens: number } {
  return { temperature: g.temperature, top_p: g.topP, max_tokens: g.maxTokens ?? defaultMaxTokens(contextSize) };
}
