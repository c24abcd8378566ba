// 16 concurrent streaming requests while the adapter is swapped 20 times. Prints failed and
// truncated responses (goal 0), the longest admission pause (goal < 250 ms on the tiny model),
// and throughput under swaps against the same load without swaps, measured in the same run.
// Run: node --import tsx bench/server-swap-under-load.ts [--model FILE] [--streams N] [--swaps N] [--backend ...]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { startCore } from "../electron/core/core.js";
import type { BackendPreference } from "../electron/core/inference/backend.js";
import { writeLoraAdapter } from "../test/inference/loraFixture.js";
import { tinyModel } from "../test/helpers/models.js";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    streams: { type: "string", default: "16" },
    swaps: { type: "string", default: "20" },
    tokens: { type: "string", default: "48" },
    backend: { type: "string", default: "auto" },
  },
});
const STREAMS = Number(values.streams);
const SWAPS = Number(values.swaps);
const TOKENS = Number(values.tokens);
const threads = Number(process.env.CLAWRL_THREADS) || undefined;
const model = values.model ?? (await tinyModel({ arch: "qwen2" }));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-bench-swap-"));
const core = await startCore({
  model,
  dataDir: path.join(dir, "data"),
  token: "bench-token-1",
  uiDir: "",
  engine: { sequences: STREAMS, maxContextSize: 512, threads, backend: values.backend as BackendPreference },
});
const engine = core.engine!;
const client = new OpenAI({ baseURL: `${core.url}/v1`, apiKey: core.token, maxRetries: 0 });
const adapterSrc = path.join(dir, "adapter.gguf");
writeLoraAdapter(adapterSrc, model, { rank: 16, seed: 4 });

interface Outcome {
  ok: boolean;
  truncated: boolean;
  tokens: number;
  error?: string;
}

async function oneStream(i: number): Promise<Outcome> {
  try {
    const stream = await client.chat.completions.create({
      model: engine.modelId,
      messages: [{ role: "user", content: `Request number ${i}: tell me something.` }],
      max_tokens: TOKENS,
      seed: i,
      stream: true,
      logprobs: true,
      stream_options: { include_usage: true },
    });
    let tokens = 0;
    let finish: string | null = null;
    let usage = -1;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage.completion_tokens;
      for (const c of chunk.choices) {
        tokens += c.logprobs?.content?.length ?? 0;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    const truncated = finish === null || usage !== tokens || (finish === "length" && tokens !== TOKENS);
    return { ok: true, truncated, tokens };
  } catch (err) {
    return { ok: false, truncated: false, tokens: 0, error: (err as Error).message };
  }
}

/** STREAMS workers, each streaming back to back until `stop()`; returns outcomes and the wall time. */
async function load(during: () => Promise<void>) {
  let running = true;
  const outcomes: Outcome[] = [];
  let n = 0;
  const t0 = performance.now();
  const workers = Array.from({ length: STREAMS }, async () => {
    while (running) outcomes.push(await oneStream(n++));
  });
  await during();
  running = false;
  await Promise.all(workers);
  const seconds = (performance.now() - t0) / 1000;
  const tokens = outcomes.reduce((a, o) => a + o.tokens, 0);
  return { outcomes, tokPerS: tokens / seconds, seconds };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
await load(() => sleep(500)); // warm-up

const pauses: number[] = [];
let stragglers = 0;
const withSwaps = await load(async () => {
  for (let k = 0; k < SWAPS; k++) {
    await sleep(150);
    const file = path.join(dir, `ckpt-${k}.gguf`);
    fs.copyFileSync(adapterSrc, file); // each checkpoint is a new file, as the trainer writes them
    const r = await engine.swapAdapter(k % 5 === 4 ? null : file, k % 5 === 4 ? "base" : `ckpt-${k}`);
    pauses.push(r.pauseMs);
    stragglers += r.stragglers;
  }
});
const baseline = await load(() => sleep(withSwaps.seconds * 1000));

const failed = withSwaps.outcomes.filter((o) => !o.ok);
const truncated = withSwaps.outcomes.filter((o) => o.truncated);
const sorted = [...pauses].sort((a, b) => a - b);
console.log(`model ${engine.modelId} (${engine.info().backend}), ${STREAMS} concurrent streams x ${TOKENS} tokens, ${SWAPS} swaps, drain bound 100 ms`);
console.log(
  `responses during swaps: ${withSwaps.outcomes.length}, failed ${failed.length}, truncated ${truncated.length}${failed[0] ? ` (first error: ${failed[0].error})` : ""}`,
);
console.log(
  `admission pause: longest ${sorted.at(-1)!.toFixed(1)} ms (goal < 250), median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms; generations finished on the old adapter: ${stragglers}`,
);
console.log(
  `throughput: with swaps ${withSwaps.tokPerS.toFixed(0)} tok/s, without ${baseline.tokPerS.toFixed(0)} tok/s, ratio ${(withSwaps.tokPerS / baseline.tokPerS).toFixed(3)}`,
);
await core.close();
fs.rmSync(dir, { recursive: true, force: true });
if (failed.length > 0 || truncated.length > 0) process.exitCode = 1;
