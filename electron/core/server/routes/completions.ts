import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Token } from "node-llama-cpp";
import { z } from "zod";
import crypto from "node:crypto";
import { IncrementalDetokenizer } from "../../inference/detokenizer.js";
import { AbortedError, type Engine, type TokenLogprob } from "../../inference/engine.js";
import { abortWhenClientLeaves } from "../clientAbort.js";
import { ApiError, badRequest } from "../errors.js";
import type { TurnRecorder } from "./openai.js";
import { generationParams } from "./generationParams.js";
import { timingsOf, usageOf } from "./replyFigures.js";
import type { LegacyLogprobs, TextCompletionReply } from "../../api/openai.js";
import { preparePlainPrompt, tokenCounter } from "../../preferences/inject.js";

/**
 * POST /v1/completions (OpenAI legacy completions, non-streaming): the prompt is tokenized as
 * plain text, no chat template. Base models (stories260K) need it: a chat template would wrap
 * a story opening in role markers the model never saw. Recorded as a turn like a chat request
 * (messages = one user message holding the prompt; the served token ids are what trains).
 *
 * `logprobs: N` returns the generated tokens' log-probs (and N alternatives each). `echo: true`
 * with `max_tokens: 0` scores the prompt instead of generating (the legacy API's way to ask how
 * likely a text is, as evaluation harnesses do); such a request is not a turn.
 */
const completionSchema = z.looseObject({
  model: z.string().optional(),
  prompt: z.string({ error: "'prompt' must be a string" }),
  max_tokens: z.number().int().nonnegative().nullish(),
  logprobs: z.number().int().min(0).max(20).nullish(),
  echo: z.boolean().nullish(),
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
    if (body.echo && body.max_tokens !== 0) throw badRequest("'echo' is supported with 'max_tokens': 0 (score the prompt, generate nothing)", "echo");
    if (body.max_tokens === 0 && !body.echo) throw badRequest("'max_tokens' must be at least 1 (or 0 with 'echo': true)", "max_tokens");
    const m = engine.model;
    const text = m.tokenize(body.prompt, false);
    const bos = m.tokens.bos;
    const tokens: Token[] = m.tokens.shouldPrependBosToken && bos !== null ? [bos, ...text] : text;
    const textStart = tokens.length - text.length;
    if (tokens.length >= engine.info().contextSize) throw badRequest(`the prompt has ${tokens.length} tokens; the context holds ${engine.info().contextSize}`, "prompt", "context_length_exceeded");
    if (body.echo) return scorePrompt(engine, body.prompt, tokens, textStart, reply);
    const messages = [{ role: "user" as const, content: body.prompt }];
    const bodyFields = { session_id: body.session_id, turn_type: body.turn_type, session_done: body.session_done };
    // A plain-text prompt has no system prompt: the preference block goes before it as a paragraph.
    const served = preparePlainPrompt(engine, tokens, textStart, rollout.preferencesFor?.({ headers: req.headers, bodyFields, fromUi: false }, tokenCounter(engine)) ?? null, engine.info().contextSize);
    const ctx = rollout.beginTurn({
      headers: req.headers,
      bodyFields,
      fromUi: false,
      messages,
      format: "completion",
      ...(served.preferences ? { preferences: served.preferences, clientPromptTokens: served.clientPromptTokens } : {}),
    });
    const signal = abortWhenClientLeaves(reply);
    try {
      const result = await engine.generate(
        // No default answer length here (unlike chat): a completion without max_tokens runs to the context's end or a stop.
        { messages, ...generationParams(body), topLogprobs: body.logprobs ?? undefined, continuesPrompt: true },
        {
          signal,
          onStart: ({ adapter }) => reply.headers({ "X-Clawrl-Session-Id": ctx.sessionId, "X-Clawrl-Turn-Id": ctx.turnId, "X-Clawrl-Adapter": adapter }),
        },
        { tokens: served.tokens, stopTriggers: [] },
      );
      const { logprobs: infos, cachedPromptTokens, ...turn } = result;
      rollout.completeTurn(ctx, turn);
      return {
        id: `cmpl-${ctx.turnId}`,
        object: "text_completion",
        created: Math.floor(Date.now() / 1000),
        model: engine.modelId,
        system_fingerprint: `clawrl-${result.adapter}`,
        choices: [{ index: 0, text: result.text, logprobs: body.logprobs == null ? null : legacyLogprobs(engine, infos.filter((i) => !m.isEogToken(i.token as Token)), body.logprobs, served.tokens), finish_reason: result.finishReason }],
        usage: usageOf(result),
        timings: timingsOf(result),
      } satisfies TextCompletionReply;
    } catch (err) {
      const aborted = err instanceof AbortedError || signal.aborted;
      rollout.abortTurn(ctx, aborted ? "client disconnected" : `error: ${(err as Error).message}`);
      if (aborted) return reply;
      if (err instanceof ApiError) throw err;
      throw new ApiError(500, `Generation failed: ${(err as Error).message}`);
    }
  });
}

/**
 * OpenAI's legacy logprobs object: tokens, their log-probs, N alternatives each, character
 * offsets. Each token's text is what it adds to the text detokenized so far (a SentencePiece
 * token's leading space depends on its place), so the tokens join into the answer's text.
 */
function legacyLogprobs(engine: Engine, infos: Array<Pick<TokenLogprob, "token" | "top"> & { logprob: number | null }>, n: number, before: readonly Token[]): LegacyLogprobs {
  // The tokens before (the prompt) decide how the first one reads, as in the answer's text.
  const text = new IncrementalDetokenizer(engine.model, before);
  const pieces = infos.map((i) => {
    const before = text.text.length;
    return text.push(i.token).slice(before);
  });
  let offset = 0;
  const text_offset = pieces.map((p) => {
    const at = offset;
    offset += p.length;
    return at;
  });
  return {
    tokens: pieces,
    token_logprobs: infos.map((i) => i.logprob),
    top_logprobs: n > 0 ? infos.map((i) => Object.fromEntries(i.top.slice(0, n).map((t) => [t.text, t.logprob]))) : null,
    text_offset,
  };
}

/**
 * echo + max_tokens 0: the text's tokens (those after `textStart`: BOS is not text), each with
 * log p(token | tokens before it); a first token with nothing before it has none (null).
 */
async function scorePrompt(engine: Engine, prompt: string, tokens: Token[], textStart: number, reply: FastifyReply) {
  const signal = abortWhenClientLeaves(reply);
  let scored: { adapter: string; logprobs: number[] };
  try {
    scored = await engine.scoreTokens(tokens, signal);
  } catch (err) {
    if (err instanceof AbortedError || signal.aborted) return reply;
    throw new ApiError(500, `Scoring failed: ${(err as Error).message}`);
  }
  reply.header("X-Clawrl-Adapter", scored.adapter);
  // scored.logprobs[i] is token i + 1's.
  const infos = tokens.map((token, i) => ({ token, logprob: i === 0 ? null : scored.logprobs[i - 1], top: [] })).slice(textStart);
  const lp = legacyLogprobs(engine, infos, 0, tokens.slice(0, textStart));
  return {
    id: `cmpl-score-${crypto.randomUUID()}`,
    object: "text_completion",
    created: Math.floor(Date.now() / 1000),
    model: engine.modelId,
    system_fingerprint: `clawrl-${scored.adapter}`,
    choices: [{ index: 0, text: prompt, logprobs: lp, finish_reason: "length" }],
    usage: { prompt_tokens: tokens.length, completion_tokens: 0, total_tokens: tokens.length },
  } satisfies TextCompletionReply;
}
