/** POST /v1/completions streamed (OpenAI wire format): server/routes/completions.ts. */
import type { FinishReason, LegacyLogprobs, Usage } from "./openai.js";

/**
 * A streamed text-completion chunk (`data:` line): a piece of one prompt's answer (`index` = the
 * prompt's place), its end (`finish_reason` set, text ""), or, last before `[DONE]` when
 * `stream_options.include_usage`, no choices and the usage of all prompts.
 */
export interface TextCompletionChunk {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: { index: number; text: string; logprobs: LegacyLogprobs | null; finish_reason: FinishReason | null }[];
  usage?: Usage;
}
