import type { ChatMessage } from "../../electron/core/api/chatTypes.js";
import type { TurnResult } from "../../electron/core/rollout/rollout.js";

/** A TurnResult as the engine would report it, for tests that do not need a model. */
export function result(text: string, extra: Partial<TurnResult> = {}): TurnResult {
  const n = Math.max(1, text.split(/\s+/).length);
  return {
    model: "tiny",
    adapter: "base",
    promptTokens: [1, 2, 3],
    responseTokens: Array.from({ length: n }, (_, i) => 10 + i),
    tokenLogprobs: Array.from({ length: n }, (_, i) => -0.1 * (i + 1)),
    text,
    finishReason: "stop",
    sampling: { temperature: 1, topP: 1 },
    ...extra,
  };
}

export const OPENCLAW_SYSTEM = `You are a personal assistant running inside OpenClaw.\n${"Tool use policy. ".repeat(200)}`;

/** OpenClaw's trailing internal-context message: a user message with a text-part array. */
export function internalContext(n: number): ChatMessage {
  return {
    role: "user",
    content: [{ type: "text", text: `<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nruntime: turn ${n}, cwd /home/u\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>` }],
  };
}
