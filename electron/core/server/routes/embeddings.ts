import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { EmbeddingsReply } from "../../api/embeddings.js";
import { EmbeddingInputError, truncated, type EmbeddingSource } from "../../inference/embeddings.js";
import { abortWhenClientLeaves } from "../clientAbort.js";
import { ApiError, badRequest, knownApiError, parseBody } from "../errors.js";

/** OpenAI caps a request at 2048 inputs; so do we (each is a pass through the model). */
const MAX_INPUTS = 2048;
const tokenArray = z.array(z.number().int().nonnegative()).min(1, "must hold at least one token");

/**
 * The /v1/embeddings request. Strict like chat: an unknown field is a 400 naming it. `input`:
 * a string, an array of strings, an array of token ids, or an array of such arrays.
 */
const embeddingsRequest = z.strictObject({
  model: z.string().nullish(),
  input: z.union(
    [
      z.string(),
      z.array(z.string()).min(1, "must hold at least one input").max(MAX_INPUTS),
      tokenArray,
      z.array(tokenArray).min(1, "must hold at least one input").max(MAX_INPUTS),
    ],
    { error: "must be a string, an array of strings, an array of token ids or an array of token-id arrays" },
  ),
  encoding_format: z.enum(["float", "base64"]).nullish(),
  dimensions: z.number().int().min(1).nullish(),
  user: z.string().nullish(),
});

export interface EmbeddingRoutesOptions {
  /** The source serving now (the served model's embedder by default; a 503 (UnavailableError) when none). */
  source: () => EmbeddingSource;
}

/** Registers POST /v1/embeddings. */
export function registerEmbeddingRoutes(app: FastifyInstance, opts: EmbeddingRoutesOptions): void {
  app.post("/v1/embeddings", async (req: FastifyRequest, reply: FastifyReply) => {
    const body = parseBody(embeddingsRequest, req.body);
    const inputs =
      typeof body.input === "string"
        ? [body.input]
        : body.input.length > 0 && typeof body.input[0] === "number"
          ? [body.input as number[]]
          : (body.input as Array<string | number[]>);
    const source = opts.source();
    const signal = abortWhenClientLeaves(reply);
    let batch;
    try {
      batch = await source.embed(inputs, signal);
    } catch (err) {
      if (err instanceof EmbeddingInputError)
        throw badRequest(err.message, "input", /tokens; at most/.test(err.message) ? "context_length_exceeded" : "invalid_value");
      if (signal.aborted) return reply;
      const known = knownApiError(err);
      if (known) throw known;
      throw new ApiError(500, `Embedding failed: ${(err as Error).message}`);
    }
    const width = batch.vectors[0]?.length ?? 0;
    if (body.dimensions != null && body.dimensions > width)
      throw badRequest(`'dimensions' is ${body.dimensions}; this model's vectors have ${width}`, "dimensions");
    const base64 = body.encoding_format === "base64";
    return {
      object: "list",
      data: batch.vectors.map((v, index) => {
        const vec = body.dimensions != null ? truncated(v, body.dimensions) : v;
        return { object: "embedding", index, embedding: base64 ? Buffer.from(vec.buffer, vec.byteOffset, vec.byteLength).toString("base64") : Array.from(vec) };
      }),
      model: source.modelId,
      usage: { prompt_tokens: batch.promptTokens, total_tokens: batch.promptTokens },
    } satisfies EmbeddingsReply;
  });
}
