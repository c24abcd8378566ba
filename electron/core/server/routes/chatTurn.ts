import type { FastifyRequest } from "fastify";
import { ContextLengthError, type Engine, type GenerateEvent, type GenerateRequest } from "../../inference/engine.js";
import { prepareChatPrompt, tokenCounter } from "../../preferences/inject.js";
import type { TurnContext, TurnOrigin } from "../../rollout/rollout.js";
import { badRequest } from "../errors.js";
import type { TurnRecorder } from "./openai.js";

/** The rl-training-headers body fallbacks (method.md): read by the rollout, never generated from. */
export type RlBodyFields = TurnOrigin["bodyFields"];

export const rlBodyFields = (body: RlBodyFields): RlBodyFields => ({ session_id: body.session_id, turn_type: body.turn_type, session_done: body.session_done });

/** The response headers of a stream (SSE, nothing buffered on the way). */
export const SSE_HEADERS = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache",
  Connection: "keep-alive",
  "X-Accel-Buffering": "no",
} as const;

/** A chat-shaped turn begun: the prompt as served, the rollout's context, and the headers that name the turn. */
export interface ChatTurn {
  prompt: ReturnType<typeof prepareChatPrompt>;
  ctx: TurnContext;
  /** the X-Clawrl-* headers of the answer, once the adapter that answers is known */
  headers(adapter: string): Record<string, string>;
  /** What a stream sent so far: pass each engine event through it. */
  seen(ev: GenerateEvent): void;
  /**
   * Our chat window stopped a stream after the answer began: records the turn with what it had
   * been sent, marked stopped (never trained on). False when there is nothing to record (an
   * outside client, the answer had not begun, or the recorder keeps no stopped turns): the caller
   * aborts the turn instead.
   */
  stop(): boolean;
}

/** The answer as far as a client received it: text, token ids and their log-probs. */
class SeenAnswer {
  adapter: string | null = null;
  text = "";
  readonly tokens: number[] = [];
  readonly logprobs: number[] = [];

  observe(ev: GenerateEvent): void {
    if (ev.type !== "content") return;
    this.text += ev.text;
    for (const l of ev.logprobs) {
      this.tokens.push(l.token);
      this.logprobs.push(l.logprob);
    }
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The step chat and Responses share between building the generation and running it: the served
 * prompt (with the preference block the rollout plans for it; a prompt past the context a 400 on
 * `contextParam`), then the turn begun in the rollout.
 */
export function beginChatTurn(
  engine: Engine,
  rollout: TurnRecorder,
  req: FastifyRequest,
  genReq: GenerateRequest,
  bodyFields: RlBodyFields,
  contextParam: string,
): ChatTurn {
  const fromUi = headerValue(req.headers["x-clawrl-client"]) === "ui";
  let prompt: ChatTurn["prompt"];
  try {
    // The served prompt may carry the preference block; the turn records the client's messages and the block apart.
    prompt = prepareChatPrompt(engine, genReq, rollout.preferencesFor?.({ headers: req.headers, bodyFields, fromUi }, tokenCounter(engine)) ?? null);
  } catch (err) {
    if (err instanceof ContextLengthError) throw badRequest(err.message, contextParam, "context_length_exceeded");
    throw err;
  }
  const ctx = rollout.beginTurn({
    headers: req.headers,
    bodyFields,
    fromUi,
    messages: genReq.messages,
    ...(prompt.preferences ? { preferences: prompt.preferences, clientPromptTokens: prompt.clientPromptTokens } : {}),
  });
  const seen = new SeenAnswer();
  const headers = (adapter: string) => {
    seen.adapter = adapter; // the answer began
    return {
      "X-Clawrl-Session-Id": ctx.sessionId,
      "X-Clawrl-Turn-Id": ctx.turnId,
      "X-Clawrl-Adapter": adapter,
      // How many standing preferences the served prompt carried (the chat shows it on the answer).
      "X-Clawrl-Preferences": String(prompt.preferences?.ids.length ?? 0),
    };
  };
  const stop = (): boolean => {
    // Only our chat window's: an outside client that drops a stream records nothing, as before (the /v1 side is unchanged).
    if (!fromUi || seen.adapter === null || !rollout.stopTurn) return false;
    rollout.stopTurn(ctx, {
      model: engine.modelId,
      adapter: seen.adapter,
      promptTokens: [...prompt.prepared.tokens],
      responseTokens: seen.tokens,
      tokenLogprobs: seen.logprobs,
      text: seen.text,
      finishReason: "stop",
      sampling: {
        temperature: genReq.temperature ?? 1,
        topP: genReq.topP ?? 1,
        ...(genReq.seed !== undefined ? { seed: genReq.seed } : {}),
        ...(genReq.maxTokens !== undefined ? { maxTokens: genReq.maxTokens } : {}),
      },
    });
    return true;
  };
  return { prompt, ctx, headers, seen: (ev) => seen.observe(ev), stop };
}
