import type { GenerateRequest } from "../../inference/engine.js";

/** The sampling fields /v1/chat/completions and /v1/completions share, as OpenAI names them (validated by each route's schema). */
export interface SamplingFields {
  temperature?: number | null;
  top_p?: number | null;
  max_tokens?: number | null;
  /** chat only: OpenAI's newer name for max_tokens, preferred when both are given */
  max_completion_tokens?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
}

export type GenerationParams = Pick<GenerateRequest, "temperature" | "topP" | "maxTokens" | "stop" | "seed">;

/**
 * One request → generation-parameters mapping for both completion routes. `top_p: 0` means
 * greedy (OpenAI's reading: nucleus of zero mass = the top token), so it becomes temperature 0
 * and top-p 1; an unset temperature is OpenAI's 1. `defaultMaxTokens` (the setting) bounds an
 * answer the request left unbounded.
 */
export function generationParams(body: SamplingFields, defaultMaxTokens?: number): GenerationParams {
  return {
    temperature: body.top_p === 0 ? 0 : (body.temperature ?? 1),
    topP: body.top_p && body.top_p > 0 ? body.top_p : 1,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? defaultMaxTokens,
    stop: body.stop == null ? undefined : typeof body.stop === "string" ? [body.stop] : body.stop,
    seed: body.seed ?? undefined,
  };
}
