/**
 * Chat's time to first token while the publish gate's fluency probe works (issue 31: the
 * slowest first tokens of a 0.5B cycle all came while the probe sampled). A real core serving a
 * real-shaped model (random weights, models/tiny/shapes.ts), the gate's own probe built as the
 * core builds it (training/gateProbe.ts) judging a random LoRA adapter over and over, and chat
 * asking at random moments: first idle, then while the probe runs. Prints p50/p95 of both and
 * the ratio (issue 31's bound: p95 during ≤ 1.3× idle). The whole cycle is bench/learning-cycle.ts;
 * this isolates the probe's share, with enough answers for a p95 in a few minutes.
 *
 *   node --import tsx bench/probe-ttft.ts [--shape qwen2.5-0.5b] [--type q8_0] [--asks 30]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startCore } from "../electron/core/core.js";
import type { ProbePrompt } from "../electron/core/inference/fluencyProbe.js";
import { gateProbeFor } from "../electron/core/training/gateProbe.js";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import type { ShapeType } from "../models/tiny/generate.js";
import { writeLoraAdapter } from "../test/inference/loraFixture.js";
import { liveCore, median, p95 } from "./lib/liveCore.js";

const { values } = parseArgs({
  options: {
    shape: { type: "string", default: "qwen2.5-0.5b" },
    type: { type: "string", default: "q8_0" },
    asks: { type: "string", default: "30" },
  },
});
const asks = Number(values.asks);
const modelPath = ensureShapeModel(values.shape, values.type as ShapeType);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-probe-ttft-"));
const adapter = path.join(dataDir, "candidate.gguf");
// Small factors: the candidate answers about as the base model does (a probe of ordinary length).
writeLoraAdapter(adapter, modelPath, { rank: 16, magnitude: 0.02 });

const core = await startCore({ model: modelPath, dataDir, token: "bench", uiDir: "", training: false });
const engine = core.engine!;
const { ask } = liveCore(core, 16);
const probe = gateProbeFor(engine);
// The gate's prompts as the loop hands them over: served chat prompts, answers of ≤ 48 tokens at the served settings.
const prompts: ProbePrompt[] = ["cat", "dog", "fox", "owl", "bee", "elk", "ant", "yak"].map((animal, i) => ({
  tokens: engine.model.tokenize(`User: Tell me a short story about a ${animal}.\nAssistant:`),
  temperature: 0.8,
  topP: 0.95,
  maxTokens: 48,
  seed: 1000 + i,
}));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

await ask("warm up");
// The probe alone first (its model instance loaded, then one candidate timed): what giving way costs it shows beside chat below.
await probe.compare(adapter, prompts.slice(0, 1));
const alone0 = performance.now();
const aloneRun = await probe.compare(adapter, prompts);
const aloneS = (performance.now() - alone0) / 1000;
const idle: number[] = [];
for (let i = 0; i < 10; i++) {
  idle.push((await ask(`idle question ${i}`, { firstTokenOnly: true })).ms);
  await sleep(200 + Math.random() * 800);
}

let stop = false;
let compares = 0;
const running = (async () => {
  while (!stop) {
    await probe.compare(adapter, prompts);
    compares++;
  }
})();
await sleep(3_000); // the probe's model instance loaded and sampling
const during: number[] = [];
const sampled0 = probe.counts.candidate + probe.counts.base;
const window0 = performance.now();
for (let i = 0; i < asks; i++) {
  // Random moments: a question lands anywhere in the probe's work (a prompt chunk, a token, a new context).
  await sleep(500 + Math.random() * 1500);
  const ms = (await ask(`a question while the gate probes ${i}`, { firstTokenOnly: true })).ms;
  during.push(ms);
  if (process.env.BENCH_TRACE) console.error(`ASK ${ms.toFixed(0)} ms`);
}
const answers = probe.counts.candidate + probe.counts.base - sampled0;
const windowS = (performance.now() - window0) / 1000;
stop = true;
await running;
await probe.close();
await core.close();
fs.rmSync(dataDir, { recursive: true, force: true });

const f = (xs: number[]) => `median ${median(xs).toFixed(0)} ms, p95 ${p95(xs).toFixed(0)} ms (${xs.length} answers)`;
console.log(`${values.shape} (${values.type}), ${os.cpus().length} CPUs, serving`);
console.log(`chat TTFT idle ${f(idle)}`);
console.log(`chat TTFT while the probe works ${f(during)}: p95 ${(p95(during) / p95(idle)).toFixed(2)}× idle`);
console.log(
  `  slowest: ${[...during]
    .sort((a, b) => b - a)
    .slice(0, 5)
    .map((x) => x.toFixed(0))
    .join(", ")} ms`,
);
console.log(`probe alone: ${aloneS.toFixed(1)} s for ${aloneRun.candidate.answers} candidate answers (the base model's sampled too)`);
// The probe's own pace beside chat: what giving way costs the gate (each answer sampled, then scored).
console.log(
  `probe: ${compares} candidates judged; ${answers} answers sampled in the ${windowS.toFixed(0)} s chat asked (${((answers / windowS) * 60).toFixed(1)} a minute)`,
);
