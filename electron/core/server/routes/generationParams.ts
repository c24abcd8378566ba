import { z } from "zod";
import type { GenerateRequest } from "../../inference/engine.js";
import { badRequest } from "../errors.js";

/** The sampling fields /v1/chat/completions and /v1/completions share, as OpenAI names them (validated by each route's schema). */
export interface SamplingFields {
  temperature?: number | null;
  top_p?: number | null;
  max_tokens?: number | null;
  /** chat only: OpenAI's newer name for max_tokens, preferred when both are given */
  max_completion_tokens?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  /** llama-server's name; 1 = off */
  repeat_penalty?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  /** token id (a decimal string, as JSON keys are) → bias from −100 (a ban) to 100 */
  logit_bias?: Record<string, number> | null;
}

const opt = <T extends z.ZodType>(t: T) => t.nullable().optional();

/** The zod fields for the penalties, top-k, min-p and logit bias (spread into a route's request schema). */
export const samplingFieldsSchema = {
  frequency_penalty: opt(z.number().min(-2).max(2)),
  presence_penalty: opt(z.number().min(-2).max(2)),
  repeat_penalty: opt(z.number().gt(0).max(10)),
  top_k: opt(z.number().int().min(0)),
  min_p: opt(z.number().min(0).max(1)),
  logit_bias: opt(z.record(z.string().regex(/^\d+$/, "keys must be token ids"), z.number().min(-100).max(100))),
};

export type GenerationParams = Pick<
  GenerateRequest,
  "temperature" | "topP" | "maxTokens" | "stop" | "seed" | "frequencyPenalty" | "presencePenalty" | "repeatPenalty" | "topK" | "minP" | "logitBias"
>;

/**
 * One request → generation-parameters mapping for both completion routes. `top_p: 0` means
 * greedy (OpenAI's reading: nucleus of zero mass = the top token), so it becomes temperature 0
 * and top-p 1; an unset temperature is OpenAI's 1. `defaultMaxTokens` (the setting) bounds an
 * answer the request left unbounded. `vocabSize`, when known, bounds logit_bias's token ids.
 */
export function generationParams(body: SamplingFields, defaultMaxTokens?: number, vocabSize?: number | null): GenerationParams {
  let logitBias: Record<number, number> | undefined;
  for (const [k, v] of Object.entries(body.logit_bias ?? {})) {
    const token = Number(k);
    if (!Number.isSafeInteger(token) || (vocabSize != null && token >= vocabSize))
      throw badRequest(
        `Invalid 'logit_bias': ${k} is not a token id of this model (0 to ${vocabSize == null ? "its vocabulary size" : vocabSize - 1}).`,
        "logit_bias",
        "invalid_value",
      );
    if (v !== 0) (logitBias ??= {})[token] = v;
  }
  return {
    temperature: body.top_p === 0 ? 0 : (body.temperature ?? 1),
    topP: body.top_p && body.top_p > 0 ? body.top_p : 1,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? defaultMaxTokens,
    stop: body.stop == null ? undefined : typeof body.stop === "string" ? [body.stop] : body.stop,
    seed: body.seed ?? undefined,
    ...(body.frequency_penalty ? { frequencyPenalty: body.frequency_penalty } : {}),
    ...(body.presence_penalty ? { presencePenalty: body.presence_penalty } : {}),
    ...(body.repeat_penalty != null && body.repeat_penalty !== 1 ? { repeatPenalty: body.repeat_penalty } : {}),
    ...(body.top_k ? { topK: body.top_k } : {}),
    ...(body.min_p ? { minP: body.min_p } : {}),
    ...(logitBias ? { logitBias } : {}),
  };
}
