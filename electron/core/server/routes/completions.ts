import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Token } from "node-llama-cpp";
import { z } from "zod";
import crypto from "node:crypto";
import { IncrementalDetokenizer } from "../../inference/detokenizer.js";
import { AbortedError, type Engine, type GenerateRequest, type GenerateResult, type TokenLogprob } from "../../inference/engine.js";
import { abortWhenClientLeaves } from "../clientAbort.js";
import { failGeneration } from "./generationFailure.js";
import { SseWriter } from "../sseWriter.js";
import { ApiError, badRequest, parseBody } from "../errors.js";
import type { TurnRecorder } from "./openai.js";
import { generationParams, samplingFieldsSchema } from "./generationParams.js";
import { applyResponseFormat, responseFormatField } from "./responseFormat.js";
import { timingsOf, usageOf } from "./replyFigures.js";
import type { FinishReason, LegacyLogprobs, TextCompletionReply, Usage } from "../../api/openai.js";
import type { TextCompletionChunk } from "../../api/completions.js";
import { preparePlainPrompt, tokenCounter } from "../../preferences/inject.js";

/**
 * POST /v1/completions (OpenAI legacy completions): the prompt is tokenized as plain text, no
 * chat template. Base models (stories260K) need it: a chat template would wrap a story opening
 * in role markers the model never saw. Each prompt is recorded as a turn like a chat request
 * (messages = one user message holding the prompt; the served token ids are what trains).
 *
 * `prompt`: a string, an array of strings (one choice per prompt, `index` = its place; LangChain's
 * `OpenAI` class sends one), token ids, or an array of token-id arrays. The prompts of one
 * request are answered one after another, each its own turn, in the request's session.
 * `stream: true` sends OpenAI's text_completion chunks (SSE), the usage last when
 * `stream_options.include_usage`. `logprobs: N` returns the generated tokens' log-probs (and N
 * alternatives each). `echo: true` with `max_tokens: 0` scores the prompt instead of generating
 * (the legacy API's way to ask how likely a text is, as evaluation harnesses do); such a request
 * is not a turn. Strict like chat: an unknown or unsupported field is a 400 naming it.
 */
const tokenIds = z.array(z.number().int().nonnegative()).min(1, "must hold at least one token");
const opt = <T extends z.ZodType>(t: T) => t.nullable().optional();
const completionSchema = z.strictObject({
  model: opt(z.string()),
  prompt: z.union([z.string(), z.array(z.string()).min(1).max(64), tokenIds, z.array(tokenIds).min(1).max(64)], {
    error: "must be a string, an array of strings, an array of token ids or an array of token-id arrays (at most 64 prompts)",
  }),
  max_tokens: opt(z.number().int().nonnegative()),
  logprobs: opt(z.number().int().min(0).max(20)),
  echo: opt(z.boolean()),
  temperature: opt(z.number().min(0).max(2)),
  top_p: opt(z.number().min(0).max(1)),
  seed: opt(z.number().int()),
  stop: opt(z.union([z.string(), z.array(z.string()).max(4)])),
  stream: opt(z.boolean()),
  stream_options: opt(z.strictObject({ include_usage: z.boolean().optional() })),
  n: opt(z.literal(1, { error: "only n=1 is supported (send the prompt several times in an array instead)" })),
  best_of: opt(z.literal(1, { error: "only best_of=1 is supported" })),
  suffix: opt(z.literal("", { error: "suffix (fill-in-the-middle) is not supported" })),
  // The penalties, top-k, min-p and logit_bias, as on chat (generationParams.ts).
  ...samplingFieldsSchema,
  user: opt(z.string()),
  response_format: opt(responseFormatField),
  // rl-training-headers body fallbacks (method.md): read by the rollout
  session_id: z.unknown().optional(),
  turn_type: z.unknown().optional(),
  session_done: z.unknown().optional(),
});
type CompletionRequest = z.infer<typeof completionSchema>;

/** One prompt as the model reads it: BOS (when the model wants one) + the text's tokens. */
interface PlainPrompt {
  text: string;
  tokens: Token[];
  textStart: number;
}

function promptsOf(engine: Engine, prompt: CompletionRequest["prompt"]): PlainPrompt[] {
  const m = engine.model;
  const list: Array<string | number[]> =
    typeof prompt === "string" ? [prompt] : typeof prompt[0] === "number" ? [prompt as number[]] : (prompt as Array<string | number[]>);
  const bos = m.tokens.bos;
  return list.map((p, i) => {
    const text = typeof p === "string" ? m.tokenize(p, false) : (p as Token[]);
    const tokens: Token[] = m.tokens.shouldPrependBosToken && bos !== null && text[0] !== bos ? [bos, ...text] : text;
    const param = typeof prompt === "string" || typeof prompt[0] === "number" ? "prompt" : `prompt[${i}]`;
    if (tokens.length >= engine.info().contextSize)
      throw badRequest(`the prompt has ${tokens.length} tokens; the context holds ${engine.info().contextSize}`, param, "context_length_exceeded");
    return { text: typeof p === "string" ? p : m.detokenize(text, false), tokens, textStart: tokens.length - text.length };
  });
}

/** The request body, with the checks across its fields that the schema cannot say. */
function checkedBody(raw: unknown): CompletionRequest {
  const body = parseBody(completionSchema, raw);
  if (body.echo && body.max_tokens !== 0) throw badRequest("'echo' is supported with 'max_tokens': 0 (score the prompt, generate nothing)", "echo");
  if (body.max_tokens === 0 && !body.echo) throw badRequest("'max_tokens' must be at least 1 (or 0 with 'echo': true)", "max_tokens");
  if (body.echo && body.stream) throw badRequest("'echo' (scoring the prompt) is not streamed; leave out 'stream'", "stream");
  if (body.stream_options && !body.stream) throw badRequest("'stream_options' needs 'stream': true", "stream_options");
  return body;
}

/** One prompt of the request as a turn: its served tokens (with the preference block) and the turn begun. */
function beginCompletionTurn(
  engine: Engine,
  rollout: TurnRecorder,
  req: FastifyRequest,
  bodyFields: { session_id: unknown; turn_type: unknown; session_done: unknown },
  p: PlainPrompt,
) {
  const messages = [{ role: "user" as const, content: p.text }];
  // A plain-text prompt has no system prompt: the preference block goes before it as a paragraph.
  const served = preparePlainPrompt(
    engine,
    p.tokens,
    p.textStart,
    rollout.preferencesFor?.({ headers: req.headers, bodyFields, fromUi: false }, tokenCounter(engine)) ?? null,
    engine.info().contextSize,
  );
  const ctx = rollout.beginTurn({
    headers: req.headers,
    bodyFields,
    fromUi: false,
    messages,
    format: "completion",
    ...(served.preferences ? { preferences: served.preferences, clientPromptTokens: served.clientPromptTokens } : {}),
  });
  return { messages, served, ctx };
}

export function registerCompletionRoutes(app: FastifyInstance, opts: { engine: Engine; rollout: TurnRecorder }): void {
  const { engine, rollout } = opts;
  app.post("/v1/completions", async (req: FastifyRequest, reply: FastifyReply) => {
    const body = checkedBody(req.body);
    const prompts = promptsOf(engine, body.prompt);
    if (body.echo) return scorePrompts(engine, prompts, reply);

    let id = ""; // cmpl-<first turn id>, set when the first turn begins (before anything is sent)
    const created = Math.floor(Date.now() / 1000);
    const model = engine.modelId;
    const stream = body.stream === true;
    const signal = abortWhenClientLeaves(reply);
    const sse = new SseWriter(reply.raw);
    const send = (data: TextCompletionChunk) => sse.write(`data: ${JSON.stringify(data)}\n\n`);
    const chunk = (index: number, text: string, logprobs: LegacyLogprobs | null, finish: FinishReason | null): TextCompletionChunk => ({
      id,
      object: "text_completion",
      created,
      model,
      choices: [{ index, text, logprobs, finish_reason: finish }],
    });
    const bodyFields = { session_id: body.session_id, turn_type: body.turn_type, session_done: body.session_done };
    const turnIds: string[] = [];
    const results: GenerateResult[] = [];
    const choices: TextCompletionReply["choices"] = [];
    // No default answer length here (unlike chat): a completion without max_tokens runs to the context's end or a stop.
    const params: Omit<GenerateRequest, "messages"> = {
      ...generationParams(body, undefined, engine.vocabSize),
      topLogprobs: body.logprobs ?? undefined,
      continuesPrompt: true,
    };
    // The grammar response_format holds each answer to (a 400 before anything starts when the schema cannot be held).
    await applyResponseFormat(engine, params, body.response_format);
    if (stream) reply.hijack();

    for (const [index, p] of prompts.entries()) {
      const { messages, served, ctx } = beginCompletionTurn(engine, rollout, req, bodyFields, p);
      turnIds.push(ctx.turnId);
      id ||= `cmpl-${ctx.turnId}`;
      const lp = body.logprobs == null ? null : new LegacyLogprobWriter(engine, body.logprobs, served.tokens);
      try {
        const result = await engine.generate(
          { messages, ...params },
          {
            signal,
            onStart: ({ adapter }) => {
              if (index > 0) return; // the headers went out with the first prompt
              const headers = { "X-Clawrl-Session-Id": ctx.sessionId, "X-Clawrl-Turn-Id": ctx.turnId, "X-Clawrl-Adapter": adapter };
              if (!stream) return void reply.headers(headers);
              reply.raw.writeHead(200, {
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                Connection: "keep-alive",
                "X-Accel-Buffering": "no",
                ...headers,
              });
              reply.raw.flushHeaders();
            },
            onEvent: stream
              ? (ev) => {
                  if (ev.type !== "content") return; // no tools on plain completions
                  const infos = ev.logprobs.filter((i) => !engine.model.isEogToken(i.token as Token));
                  if (ev.text || (lp && infos.length)) send(chunk(index, ev.text, lp ? lp.push(infos) : null, null));
                }
              : undefined,
          },
          { tokens: served.tokens, stopTriggers: [] },
        );
        const { logprobs: infos, cachedPromptTokens, ...turn } = result;
        rollout.completeTurn(ctx, turn);
        results.push(result);
        if (stream) {
          send(chunk(index, "", null, result.finishReason));
          sse.flush();
        } else
          choices.push({
            index,
            text: result.text,
            logprobs: lp ? lp.push(infos.filter((i) => !engine.model.isEogToken(i.token as Token))) : null,
            finish_reason: result.finishReason,
          });
      } catch (err) {
        return failGeneration({
          err,
          signal,
          stream,
          reply,
          abortTurn: (reason) => rollout.abortTurn(ctx, reason),
          streamError: (message) => {
            sse.write(`data: ${JSON.stringify(new ApiError(500, message).toJSON())}\n\n`);
            sse.flush();
          },
        });
      }
    }

    const usage = summedUsage(results);
    if (stream) {
      if (body.stream_options?.include_usage) send({ id, object: "text_completion", created, model, choices: [], usage });
      sse.write("data: [DONE]\n\n");
      sse.flush();
      reply.raw.end();
      return reply;
    }
    if (turnIds.length > 1) reply.header("X-Clawrl-Turn-Id", turnIds.join(","));
    return {
      id,
      object: "text_completion",
      created,
      model,
      system_fingerprint: `clawrl-${results[0].adapter}`,
      choices,
      usage,
      // llama-server's figures describe one answer: given when there is one.
      ...(results.length === 1 ? { timings: timingsOf(results[0]) } : {}),
    } satisfies TextCompletionReply;
  });
}

function summedUsage(results: GenerateResult[]): Usage {
  const all = results.map(usageOf);
  const sum = (f: (u: Usage) => number) => all.reduce((s, u) => s + f(u), 0);
  return {
    prompt_tokens: sum((u) => u.prompt_tokens),
    completion_tokens: sum((u) => u.completion_tokens),
    total_tokens: sum((u) => u.total_tokens),
    prompt_tokens_details: { cached_tokens: sum((u) => u.prompt_tokens_details?.cached_tokens ?? 0) },
  };
}

/**
 * OpenAI's legacy logprobs object, built a piece at a time (a stream's chunk, or the whole
 * answer): tokens, their log-probs, N alternatives each, character offsets into the answer.
 * Each token's text is what it adds to the text detokenized so far (a SentencePiece token's
 * leading space depends on its place), so the tokens join into the answer's text.
 */
class LegacyLogprobWriter {
  private readonly text: IncrementalDetokenizer;
  private offset = 0;

  constructor(
    engine: Engine,
    private readonly n: number,
    /** the tokens before (the prompt): they decide how the first one reads, as in the answer's text */
    before: readonly Token[],
  ) {
    this.text = new IncrementalDetokenizer(engine.model, before);
  }

  push(infos: Array<Pick<TokenLogprob, "token" | "top"> & { logprob: number | null }>): LegacyLogprobs {
    const pieces = infos.map((i) => {
      const before = this.text.text.length;
      return this.text.push(i.token).slice(before);
    });
    const text_offset = pieces.map((p) => {
      const at = this.offset;
      this.offset += p.length;
      return at;
    });
    return {
      tokens: pieces,
      token_logprobs: infos.map((i) => i.logprob),
      top_logprobs: this.n > 0 ? infos.map((i) => Object.fromEntries(i.top.slice(0, this.n).map((t) => [t.text, t.logprob]))) : null,
      text_offset,
    };
  }
}

/**
 * echo + max_tokens 0: each prompt's text tokens (those after `textStart`: BOS is not text), each
 * with log p(token | tokens before it); a first token with nothing before it has none (null).
 */
async function scorePrompts(engine: Engine, prompts: PlainPrompt[], reply: FastifyReply) {
  const signal = abortWhenClientLeaves(reply);
  const choices: TextCompletionReply["choices"] = [];
  let adapter = "";
  let promptTokens = 0;
  for (const [index, { text, tokens, textStart }] of prompts.entries()) {
    let scored: { adapter: string; logprobs: number[] };
    try {
      scored = await engine.scoreTokens(tokens, signal);
    } catch (err) {
      if (err instanceof AbortedError || signal.aborted) return reply;
      throw new ApiError(500, `Scoring failed: ${(err as Error).message}`);
    }
    adapter ||= scored.adapter;
    promptTokens += tokens.length;
    // scored.logprobs[i] is token i + 1's.
    const infos = tokens.map((token, i) => ({ token, logprob: i === 0 ? null : scored.logprobs[i - 1], top: [] })).slice(textStart);
    const lp = new LegacyLogprobWriter(engine, 0, tokens.slice(0, textStart)).push(infos);
    choices.push({ index, text, logprobs: lp, finish_reason: "length" });
  }
  reply.header("X-Clawrl-Adapter", adapter);
  return {
    id: `cmpl-score-${crypto.randomUUID()}`,
    object: "text_completion",
    created: Math.floor(Date.now() / 1000),
    model: engine.modelId,
    system_fingerprint: `clawrl-${adapter}`,
    choices,
    usage: { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens },
  } satisfies TextCompletionReply;
}
