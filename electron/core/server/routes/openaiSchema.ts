import { z } from "zod";
import { parseBody } from "../errors.js";
import { samplingFieldsSchema } from "./generationParams.js";
import { responseFormatField } from "./responseFormat.js";

/**
 * The /v1/chat/completions request as we accept it. Strict: a field we do not support is a
 * 400 naming it (clients should learn it was ignored rather than get silently different output).
 */
const textPart = z.strictObject({ type: z.literal("text"), text: z.string() });
const content = z.union([z.string(), z.array(textPart)], { error: "must be a string or an array of {type: 'text', text} parts" });
const name = z.string().max(256).optional();

const toolCall = z.strictObject({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion("role", [
  z.strictObject({ role: z.literal("system"), content, name }),
  z.strictObject({ role: z.literal("developer"), content, name }),
  z.strictObject({ role: z.literal("user"), content, name }),
  z.strictObject({
    role: z.literal("assistant"),
    content: content.nullable().optional(),
    name,
    tool_calls: z.array(toolCall).optional(),
    refusal: z.string().nullable().optional(),
  }),
  z.strictObject({ role: z.literal("tool"), content, tool_call_id: z.string().min(1) }),
]);

const functionName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, underscores or dashes");

const tool = z.strictObject({
  type: z.literal("function"),
  function: z.strictObject({
    name: functionName,
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

const opt = <T extends z.ZodType>(t: T) => t.nullable().optional();

export const chatCompletionRequest = z.strictObject({
  model: opt(z.string()),
  messages: z.array(message).min(1, "must hold at least one message"),
  stream: opt(z.boolean()),
  stream_options: opt(z.strictObject({ include_usage: z.boolean().optional() })),
  temperature: opt(z.number().min(0).max(2)),
  top_p: opt(z.number().min(0).max(1)),
  max_tokens: opt(z.number().int().min(1)),
  max_completion_tokens: opt(z.number().int().min(1)),
  stop: opt(z.union([z.string(), z.array(z.string()).max(4)])),
  seed: opt(z.number().int()),
  n: opt(z.literal(1, { error: "only n=1 is supported" })),
  tools: opt(z.array(tool)),
  tool_choice: opt(
    z.union([z.enum(["none", "auto", "required"]), z.strictObject({ type: z.literal("function"), function: z.strictObject({ name: functionName }) })]),
  ),
  parallel_tool_calls: opt(z.boolean()),
  logprobs: opt(z.boolean()),
  top_logprobs: opt(z.number().int().min(0).max(20)),
  ...samplingFieldsSchema,
  response_format: opt(responseFormatField),
  user: opt(z.string()),
  store: opt(z.boolean()),
  metadata: opt(z.record(z.string(), z.string())),
  // rl-training-headers body fallbacks (method.md): read by the rollout, removed before generation
  session_id: z.unknown().optional(),
  turn_type: z.unknown().optional(),
  session_done: z.unknown().optional(),
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequest>;

/** Validates a request body; the first problem becomes an OpenAI-style 400 naming its field (server/errors.ts parseBody). */
export function parseChatRequest(body: unknown): ChatCompletionRequest {
  return parseBody(chatCompletionRequest, body);
}
