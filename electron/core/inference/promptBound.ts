/**
 * Huge prompts (issue 26 F4). llama.cpp tokenizes synchronously: a 30 MiB message held the
 * event loop for 13 s before the route found it too long. Before the route tokenizes a prompt:
 *
 * 1. Its byte length bounds its token count from below: no token covers more bytes than the
 *    model's longest vocabulary entry (models/gguf/loadable.ts maxTokenBytes), so a prompt of
 *    B bytes has at least ceil(B / maxTokenBytes) tokens. When that already fills the context it
 *    is refused at once (400 context_length_exceeded), whatever its size.
 * 2. A long prompt that passes (more than CHUNKED_FROM bytes) is counted in chunks with a yield
 *    to the event loop between them. Chunks are sized from the time the last one took (aiming
 *    at CHUNK_TARGET_MS): tokenizing is superlinear in a run without spaces (SentencePiece on
 *    CJK text: 2 ms for 1k characters, 23 ms for 4k), so no fixed size is safe. When the count, less 2 per chunk boundary
 *    (what a cut can change: the tokens that touch it, and SentencePiece's leading space), fills
 *    the context, it is refused. What remains for the route is one exact tokenization of a
 *    prompt that (nearly) fits the context.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { FastifyRequest } from "fastify";
import { messageText, type ChatMessage } from "../api/chatTypes.js";
import { maxTokenBytes } from "../../../models/gguf/loadable.js";
import { InvalidInputError } from "../domainErrors.js";

/** What the check needs of the engine. */
export interface PromptBoundEngine {
  info(): { contextSize: number; modelPath: string; trainContextSize?: number };
  model: { tokenize(text: string, specialTokens?: boolean): readonly unknown[] };
}

/** Prompts longer than this (bytes) are counted in chunks before the route tokenizes them. */
export const CHUNKED_FROM = 32 * 1024;
/** What one chunk's tokenization should take; chunks are between MIN_CHUNK and MAX_CHUNK characters. */
export const CHUNK_TARGET_MS = 4;
const MIN_CHUNK = 256;
const MAX_CHUNK = 16 * 1024;
/** Tokens a cut between chunks may add to the count. */
const PER_CUT = 2;

function tooLong(contextSize: number, atLeast: number, param: string) {
  return new InvalidInputError(`This model's context is ${contextSize} tokens; the prompt has at least ${atLeast} tokens (no room for an answer).`, {
    param,
    code: "context_length_exceeded",
  });
}

/** An end for a chunk near `end`: after whitespace if there is some close before it, never inside a surrogate pair. */
function cutAt(text: string, start: number, end: number): number {
  if (end >= text.length) return text.length;
  for (let i = end; i > end - 256 && i > start + 1; i--) {
    const c = text.charCodeAt(i - 1);
    if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) return i - 1; // cut before the space: it starts the next word's token
  }
  const c = text.charCodeAt(end - 1);
  return c >= 0xd800 && c <= 0xdbff ? end - 1 : end;
}

/**
 * Throws an InvalidInputError (code context_length_exceeded) when `texts` (the prompt's parts, as the
 * template will include them verbatim) cannot fit the engine's context; resolves otherwise.
 */
export async function checkPromptLength(
  engine: PromptBoundEngine,
  texts: readonly string[],
  param: string,
  contextSize = engine.info().contextSize,
): Promise<void> {
  const { modelPath } = engine.info();
  let bytes = 0;
  for (const t of texts) bytes += Buffer.byteLength(t, "utf8");
  const perToken = maxTokenBytes(modelPath);
  if (perToken !== null && Math.ceil(bytes / perToken) >= contextSize) throw tooLong(contextSize, Math.ceil(bytes / perToken), param);
  if (bytes <= CHUNKED_FROM) return;
  let tokens = 0;
  let cuts = 0;
  let chunk = 1024;
  for (const text of texts) {
    for (let i = 0; i < text.length;) {
      const end = cutAt(text, i, i + chunk);
      const t0 = performance.now();
      tokens += engine.model.tokenize(text.slice(i, end), false).length;
      const ms = performance.now() - t0;
      // Grows at most 2× a step: the cost is superlinear, so a linear estimate overshoots.
      chunk = Math.round(Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, 2 * (end - i), ((end - i) * CHUNK_TARGET_MS) / Math.max(ms, 0.25))));
      i = end;
      if (i < text.length) cuts++;
      if (tokens - PER_CUT * cuts >= contextSize) throw tooLong(contextSize, tokens - PER_CUT * cuts, param);
      await yieldToLoop();
    }
  }
}

const strings = (xs: unknown[]): string[] => xs.filter((x): x is string => typeof x === "string");

/** Text parts of a Responses API input item (message content, function_call_output output). */
function itemTexts(item: unknown): string[] {
  if (!item || typeof item !== "object") return [];
  const it = item as { content?: unknown; output?: unknown };
  const out: string[] = [];
  if (typeof it.content === "string") out.push(it.content);
  else if (Array.isArray(it.content))
    for (const p of it.content) if (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string") out.push((p as { text: string }).text);
  if (typeof it.output === "string") out.push(it.output);
  return out;
}

/**
 * The prompt texts of a /v1 request body, as the prompt will hold them verbatim (tool-call
 * arguments, re-serialized, are left out: they may shrink); null when the route is not one that
 * tokenizes a prompt. `each`: every text is its own input (embeddings), checked alone.
 */
export function promptTexts(route: string | undefined, body: unknown): { texts: string[]; param: string; each?: boolean } | null {
  if (!body || typeof body !== "object") return null;
  const b = body as { messages?: unknown; prompt?: unknown; input?: unknown; instructions?: unknown };
  if (route === "/v1/chat/completions") {
    if (!Array.isArray(b.messages)) return null;
    const texts: string[] = [];
    for (const m of b.messages) if (m && typeof m === "object") texts.push(messageText(m as ChatMessage));
    return { texts, param: "messages" };
  }
  if (route === "/v1/completions") return typeof b.prompt === "string" ? { texts: [b.prompt], param: "prompt" } : null;
  if (route === "/v1/responses") {
    const texts = typeof b.instructions === "string" ? [b.instructions] : [];
    if (typeof b.input === "string") texts.push(b.input);
    else if (Array.isArray(b.input)) for (const item of b.input) texts.push(...itemTexts(item));
    return { texts, param: "input" };
  }
  if (route === "/v1/embeddings") {
    const texts = typeof b.input === "string" ? [b.input] : Array.isArray(b.input) ? strings(b.input) : [];
    return { texts, param: "input", each: true };
  }
  return null;
}

/**
 * A Fastify preHandler for the generation routes: checkPromptLength on the served engine (none
 * loaded: the route answers for itself). Registered once on the server (core.ts).
 */
export function promptLengthGuard(engine: () => PromptBoundEngine | null): (req: FastifyRequest) => Promise<void> {
  return async (req) => {
    if (req.method !== "POST") return;
    const prompt = promptTexts(req.routeOptions.url, req.body);
    if (!prompt) return;
    const e = engine();
    if (!e) return;
    if (!prompt.each) return checkPromptLength(e, prompt.texts, prompt.param);
    // An embedding input has a context of its own, never above the model's trained context.
    const { trainContextSize, contextSize } = e.info();
    for (const t of prompt.texts) await checkPromptLength(e, [t], prompt.param, trainContextSize ?? contextSize);
  };
}

/**
 * The largest request body for a server whose model has `contextSize` tokens: 64 bytes a token
 * (JSON escapes included, far above real text), at least 1 MiB; 8 MiB when no model is loaded
 * at start (the limit is fixed when the server starts; a model loaded later keeps it).
 */
export function bodyLimitFor(contextSize: number | undefined): number {
  return contextSize === undefined ? 8 << 20 : Math.max(1 << 20, contextSize * 64);
}
