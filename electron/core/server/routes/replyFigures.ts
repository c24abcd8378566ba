/**
 * The figures a /v1 reply carries about its answer, written once for chat and text completions:
 * OpenAI's `usage`, and llama-server's `timings` (how long the prompt and the answer took).
 */
import type { LlamaTimings, Usage } from "../../api/openai.js";
import type { GenerateResult } from "../../inference/engine.js";

export function usageOf(r: Pick<GenerateResult, "promptTokens" | "responseTokens" | "cachedPromptTokens">): Usage {
  return {
    prompt_tokens: r.promptTokens.length,
    completion_tokens: r.responseTokens.length,
    total_tokens: r.promptTokens.length + r.responseTokens.length,
    prompt_tokens_details: { cached_tokens: r.cachedPromptTokens },
  };
}

const perSecond = (n: number, ms: number) => (n > 0 && ms > 0 ? (1000 * n) / ms : null);

export function timingsOf({ timings: t }: Pick<GenerateResult, "timings">): LlamaTimings {
  return {
    prompt_n: t.promptTokens,
    prompt_ms: t.firstTokenMs,
    prompt_per_second: perSecond(t.promptTokens, t.firstTokenMs),
    predicted_n: t.decodeTokens,
    predicted_ms: t.decodeMs,
    predicted_per_second: perSecond(t.decodeTokens, t.decodeMs),
  };
}
