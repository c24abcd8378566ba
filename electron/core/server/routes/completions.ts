import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Token } from "node-llama-cpp";
import { z } from "zod";
import { AbortedError, type Engine } from "../../inference/engine.js";
import { ApiError, badRequest } from "../errors.js";
import type { TurnRecorder } from "./openai.js";

/**
 * POST /v1/completions (OpenAI legacy completions, non-streaming): the prompt is tokenized as
 * plain text, no chat template. Base models (stories260K) need it: a chat template would wrap
 * a story opening in role markers the model never saw. Recorded as a turn like a chat request
 * (messages = one user message holding the prompt; the served token ids are what trains).
 */
const completionSchema = z.looseObject({
  model: z.string().optional(),
  prompt: z.string({ error: "'prompt' must be a string" }),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  stream: z.literal(false).nullish(),
  session_id: z.unknown().optional(),
  turn_type: z.unknown().optional(),
  session_done: z.unknown().optional(),
});

export function registerCompletionRoutes(app: FastifyInstance, opts: { engine: Engine; rollout: TurnRecorder }): void {
  const { engine, rollout } = opts;
  app.post("/v1/completions", async (req: FastifyRequest, reply: FastifyReply) => {
    const parsed = completionSchema.safeParse(req.body);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw badRequest(`${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`, i.path.join(".") || null);
    }
    const body = parsed.data;
    const m = engine.model;
    const text = m.tokenize(body.prompt, false);
    const bos = m.tokens.bos;
    const tokens: Token[] = m.tokens.shouldPrependBosToken && bos !== null ? [bos, ...text] : text;
    if (tokens.length >= engine.info().contextSize) throw badRequest(`the prompt has ${tokens.length} tokens; the context holds ${engine.info().contextSize}`, "prompt", "context_length_exceeded");
    const messages = [{ role: "user" as const, content: body.prompt }];
    const ctx = rollout.beginTurn({
      headers: req.headers,
      bodyFields: { session_id: body.session_id, turn_type: body.turn_type, session_done: body.session_done },
      fromUi: false,
      messages,
      format: "completion",
    });
    const abort = new AbortController();
    reply.raw.on("close", () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const stop = body.stop == null ? undefined : typeof body.stop === "string" ? [body.stop] : body.stop;
    try {
      const result = await engine.generate(
        { messages, temperature: body.top_p === 0 ? 0 : (body.temperature ?? 1), topP: body.top_p && body.top_p > 0 ? body.top_p : 1, maxTokens: body.max_tokens ?? undefined, seed: body.seed ?? undefined, stop },
        {
          signal: abort.signal,
          onStart: ({ adapter }) => reply.headers({ "X-Clawrl-Session-Id": ctx.sessionId, "X-Clawrl-Turn-Id": ctx.turnId, "X-Clawrl-Adapter": adapter }),
        },
        { tokens, stopTriggers: [] },
      );
      const { logprobs: _lp, cachedPromptTokens, ...turn } = result;
      rollout.completeTurn(ctx, turn);
      return {
        id: `cmpl-${ctx.turnId}`,
        object: "text_completion",
        created: Math.floor(Date.now() / 1000),
        model: engine.modelId,
        system_fingerprint: `clawrl-${result.adapter}`,
        choices: [{ index: 0, text: result.text, logprobs: null, finish_reason: result.finishReason }],
        usage: {
          prompt_tokens: result.promptTokens.length,
          completion_tokens: result.responseTokens.length,
          total_tokens: result.promptTokens.length + result.responseTokens.length,
          prompt_tokens_details: { cached_tokens: cachedPromptTokens },
        },
      };
    } catch (err) {
      const aborted = err instanceof AbortedError || abort.signal.aborted;
      rollout.abortTurn(ctx, aborted ? "client disconnected" : `error: ${(err as Error).message}`);
      if (aborted) return reply;
      if (err instanceof ApiError) throw err;
      throw new ApiError(500, `Generation failed: ${(err as Error).message}`);
    }
  });
}
