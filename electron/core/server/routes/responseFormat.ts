/**
 * OpenAI's `response_format` for both completion routes: the field's schema (zod) and the grammar
 * it holds the answer to, a schema the grammar cannot express being a 400 that names the keyword.
 */
import type { LlamaGrammar } from "node-llama-cpp";
import { z } from "zod";
import type { Engine, GenerateRequest } from "../../inference/engine.js";
import { closingReserve, grammarForResponseFormat, UnsupportedSchemaError, type ResponseFormat } from "../../inference/jsonSchemaGrammar.js";
import { badRequest } from "../errors.js";

export const responseFormatField = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text") }),
  z.strictObject({ type: z.literal("json_object") }),
  z.strictObject({
    type: z.literal("json_schema"),
    json_schema: z.strictObject({
      name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, underscores or dashes"),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]) satisfies z.ZodType<ResponseFormat>;

/** The grammar for a request's response_format (null: plain text), and the tokens its JSON needs to close. */
export async function responseFormatGrammar(
  engine: Pick<Engine, "llama">,
  format: ResponseFormat | null | undefined,
  param = "response_format",
): Promise<{ grammar: LlamaGrammar; reserve: number } | null> {
  try {
    const grammar = await grammarForResponseFormat(engine.llama, format);
    if (!grammar) return null;
    const schema = format?.type === "json_schema" ? format.json_schema.schema : undefined;
    return { grammar, reserve: schema ? closingReserve(schema) : 16 };
  } catch (err) {
    if (err instanceof UnsupportedSchemaError) throw badRequest(err.message, `${param}.json_schema.schema`, "unsupported_schema");
    // llama.cpp refused the grammar the schema became (a shape node-llama-cpp cannot compile).
    throw badRequest(
      `The JSON schema cannot be turned into a decoding grammar: ${(err as Error).message}`,
      `${param}.json_schema.schema`,
      "unsupported_schema",
    );
  }
}

/** Holds `genReq`'s answer to `format` (nothing for plain text): the grammar and the tokens it needs to close. */
export async function applyResponseFormat(
  engine: Pick<Engine, "llama">,
  genReq: Pick<GenerateRequest, "grammar" | "grammarReserve">,
  format: ResponseFormat | null | undefined,
  param?: string,
): Promise<void> {
  const held = await responseFormatGrammar(engine, format, param);
  if (!held) return;
  genReq.grammar = held.grammar;
  genReq.grammarReserve = held.reserve;
}
