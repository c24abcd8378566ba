// Chat time to first token while the local judge (base model, own context, 3 votes + 3 hint
// votes) works in the background, against chat alone, in one run; and the time to judge a turn.
// Run: node --import tsx bench/judge-vs-chat.ts [--model FILE | --layers N --dim N] [--rounds N] [--judge-tokens N]
// (default model: the tiny qwen2 test model; CLAWRL_THREADS sets CPU threads)
import { parseArgs } from "node:util";
import { Engine } from "../electron/core/inference/engine.js";
import { judgeTurn } from "../electron/core/judge/judge.js";
import { judgeBackendFactory } from "../electron/core/judge/sources.js";
import { tinyModel } from "../test/helpers/models.js";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    rounds: { type: "string", default: "21" },
    "judge-tokens": { type: "string", default: "128" },
    layers: { type: "string", default: "2" },
    dim: { type: "string", default: "64" },
  },
});
const ROUNDS = Number(values.rounds);
const threads = Number(process.env.CLAWRL_THREADS) || undefined;
const engine = await Engine.load({
  modelPath: values.model ?? (await tinyModel({ arch: "qwen2", layers: Number(values.layers), dim: Number(values.dim) })),
  backend: "cpu",
  threads,
  sequences: 2,
  maxContextSize: 2048,
});
const judge = await judgeBackendFactory(engine, { threads })({ kind: "base" }, 3);
const input = {
  context: [
    { role: "system" as const, content: "You are a helpful assistant." },
    { role: "user" as const, content: "Convert 5 miles to kilometres, please." },
  ],
  answer: "5 miles is about 8.05 kilometres.",
  nextState: [{ role: "user" as const, content: "Thanks! Now 10 miles?" }],
};

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

async function ttft(i: number): Promise<number> {
  const t0 = performance.now();
  let first = 0;
  await engine.generate(
    { messages: [{ role: "user", content: `Tell me a story number ${i}.` }], maxTokens: 8, seed: i },
    {
      onEvent: (e) => {
        if (!first && e.type === "content") first = performance.now();
      },
    },
  );
  return (first || performance.now()) - t0;
}

async function chatRounds(): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    out.push(await ttft(i));
    await new Promise((r) => setTimeout(r, 20)); // a user's pause between messages
  }
  return out;
}

const maxTokens = Number(values["judge-tokens"]);
await ttft(-1); // warm up
await judgeTurn(judge, input, { votes: 3, maxTokens: 8 });

// Judge alone.
const judgeAlone: number[] = [];
for (let i = 0; i < 3; i++) {
  const t0 = performance.now();
  await judgeTurn(judge, input, { votes: 3, maxTokens, seed: i * 10 });
  judgeAlone.push(performance.now() - t0);
}

const idle = await chatRounds();
let stop = false;
let judged = 0;
const bg = (async () => {
  while (!stop) {
    await judgeTurn(judge, input, { votes: 3, maxTokens, seed: 1000 + judged });
    judged++;
  }
})();
const busy = await chatRounds();
stop = true;
await bg;

const f = (x: number) => x.toFixed(1);
console.log(`model ${engine.modelId}, threads ${threads ?? "default"}, ${ROUNDS} chat rounds each, judge outputs up to ${maxTokens} tokens`);
console.log(`judge a turn (3 PRM + 3 hint votes), alone: median ${f(pct(judgeAlone, 0.5))} ms`);
console.log(`chat TTFT idle:          p50 ${f(pct(idle, 0.5))} ms  p95 ${f(pct(idle, 0.95))} ms`);
console.log(`chat TTFT judge running: p50 ${f(pct(busy, 0.5))} ms  p95 ${f(pct(busy, 0.95))} ms  (${judged} turns judged meanwhile)`);
console.log(`ratio judge/idle: p50 ${(pct(busy, 0.5) / pct(idle, 0.5)).toFixed(2)}  p95 ${(pct(busy, 0.95) / pct(idle, 0.95)).toFixed(2)}`);
await judge.close();
await engine.close();
