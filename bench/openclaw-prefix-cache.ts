// Time to first token of turn 2 vs turn 1 of an OpenClaw-shaped conversation (a ~12k-token
// system prompt + 12 tools, internal-context message last) through our server, in one run on
// the same model. Turn 2 replays turn 1's answer, so its prompt starts with turn 1's prompt
// up to the internal-context message: with the KV cache kept per session, only the new suffix
// is evaluated. Control: the same turn-2 request on cleared sequences (cold). Goal: turn 2 < 0.2 x turn 1.
// Run: node --import tsx bench/openclaw-prefix-cache.ts [--model FILE] [--prompt-tokens N] [--rounds N] [--backend auto|cuda|vulkan|cpu]
// (default model: the tiny qwen2 test model, dim 256; CLAWRL_THREADS sets CPU threads)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { startCore } from "../electron/core/core.js";
import type { BackendPreference } from "../electron/core/inference/backend.js";
import { tinyModel } from "../test/helpers/models.js";
import { internalContextMessage, openclawSystemPrompt, openclawTools } from "../test/openclaw/openclawShape.js";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    "prompt-tokens": { type: "string", default: "12000" },
    rounds: { type: "string", default: "3" },
    backend: { type: "string", default: "auto" },
  },
});
const TARGET = Number(values["prompt-tokens"]);
const ROUNDS = Number(values.rounds);
const SEQUENCES = 2;
const threads = Number(process.env.CLAWRL_THREADS) || undefined;
const model = values.model ?? (await tinyModel({ arch: "qwen2", dim: 256 }));
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-bench-oc-"));
const core = await startCore({
  model,
  dataDir,
  token: "bench-token-1",
  uiDir: "",
  engine: { sequences: SEQUENCES, threads, backend: values.backend as BackendPreference },
});
const engine = core.engine!;
const info = engine.info();
const client = new OpenAI({ baseURL: `${core.url}/v1`, apiKey: core.token, maxRetries: 0, timeout: 600_000 });
const tools = openclawTools.flatMap((t) =>
  t.type === "function" ? [{ name: t.function.name, description: t.function.description, parameters: t.function.parameters }] : [],
);

// Size the system prompt so that system + tools is about TARGET tokens for this model's vocabulary.
const countTokens = (system: string) =>
  engine.renderPrompt({
    messages: [
      { role: "system", content: system },
      { role: "user", content: "hi" },
    ],
    tools,
  }).tokens.length;
let chars = 38_000;
for (let i = 0; i < 4; i++) chars = Math.max(1000, Math.round((chars * TARGET) / countTokens(openclawSystemPrompt(chars))));
const system: Msg = { role: "system", content: openclawSystemPrompt(chars) };

interface Timed {
  ms: number;
  promptTokens: number;
  cachedTokens: number;
  answer: Msg;
}

/**
 * One streamed request as OpenClaw sends it, answering one token: the time until that token
 * arrives is the time to first token (prefill + one step), whatever the tool parser holds back.
 */
async function turn(messages: Msg[]): Promise<Timed> {
  const t0 = performance.now();
  const stream = await client.chat.completions.create({
    model: info.modelId,
    messages,
    tools: openclawTools,
    tool_choice: "auto",
    stream: true,
    stream_options: { include_usage: true },
    max_completion_tokens: 1,
    temperature: 0,
  });
  let text = "";
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    if (chunk.usage) usage = chunk.usage;
  }
  const ms = performance.now() - t0;
  return {
    ms,
    promptTokens: usage?.prompt_tokens ?? 0,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    answer: { role: "assistant", content: text },
  };
}

/** Forgets every sequence's KV cache, so the next request pays the whole prefill. */
async function clearAll(): Promise<void> {
  const leases = await Promise.all(Array.from({ length: SEQUENCES }, () => engine.gate.acquire([])));
  for (const l of leases) await l.sequence.clearHistory();
  for (const l of leases) l.release();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows: Array<{ t1: Timed; t2: Timed; cold: Timed }> = [];
for (let r = 0; r < ROUNDS; r++) {
  const first: Msg = { role: "user", content: `Round ${r}: list the files in this project and tell me what it does.` };
  const turn1 = [system, first, internalContextMessage(1)];
  await clearAll();
  const t1 = await turn(turn1);
  const turn2 = [system, first, t1.answer, { role: "user", content: "Now open the README and summarise it." } as Msg, internalContextMessage(2)];
  const t2 = await turn(turn2);
  await clearAll();
  const cold = await turn(turn2);
  rows.push({ t1, t2, cold });
  console.log(
    `round ${r + 1}: turn 1 ${t1.ms.toFixed(0)} ms (${t1.promptTokens} prompt tokens, ${t1.cachedTokens} cached)  ` +
      `turn 2 ${t2.ms.toFixed(0)} ms (${t2.promptTokens} prompt, ${t2.cachedTokens} cached)  turn 2 cold ${cold.ms.toFixed(0)} ms (${cold.cachedTokens} cached)`,
  );
}

const m1 = median(rows.map((x) => x.t1.ms));
const m2 = median(rows.map((x) => x.t2.ms));
const mc = median(rows.map((x) => x.cold.ms));
console.log(
  `\nmodel ${info.modelId} (${info.backend}, context ${info.contextSize}, ${SEQUENCES} sequences), system prompt ${chars} chars, ${rows[0].t1.promptTokens}-token turn-1 prompt`,
);
console.log(`time to first token, median of ${ROUNDS}: turn 1 ${m1.toFixed(0)} ms, turn 2 ${m2.toFixed(0)} ms, turn 2 without the cache ${mc.toFixed(0)} ms`);
console.log(`ratio turn 2 / turn 1 = ${(m2 / m1).toFixed(3)} (goal < 0.2)   turn 2 cold / turn 1 = ${(mc / m1).toFixed(3)}`);
await core.close();
fs.rmSync(dataDir, { recursive: true, force: true });
