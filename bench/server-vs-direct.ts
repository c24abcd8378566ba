// Time to first token and decode speed through our server (HTTP + SSE, openai client, turn
// recording, token log-probs) against node-llama-cpp called directly in the same process, on
// the same model, prompt and greedy tokens. Goal: server ≥ 0.95 of direct.
// Run: node --import tsx bench/server-vs-direct.ts [--model FILE] [--tokens N] [--rounds N] [--backend auto|cuda|vulkan|cpu]
// (default model: the tiny qwen2 test model; CLAWRL_THREADS sets CPU threads, default all cores)
import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import OpenAI from "openai";
import type { Token } from "node-llama-cpp";
import { startCore } from "../electron/core/core.js";
import type { BackendPreference } from "../electron/core/inference/backend.js";
import { tinyModel } from "../test/helpers/models.js";

const { values } = parseArgs({
  options: { model: { type: "string" }, tokens: { type: "string", default: "128" }, rounds: { type: "string", default: "7" }, backend: { type: "string", default: "auto" } },
});
const TOKENS = Number(values.tokens);
const ROUNDS = Number(values.rounds);
const threads = Number(process.env.CLAWRL_THREADS) || undefined;
const model = values.model ?? (await tinyModel({ arch: "qwen2" }));
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-bench-svd-"));
const messages = [{ role: "system" as const, content: "You are a helpful assistant." }, { role: "user" as const, content: "Tell me a long story about a robot who learns to paint." }];

const core = await startCore({ model, dataDir, token: "bench-token-1", uiDir: "", engine: { sequences: 1, maxContextSize: 4096, threads, backend: values.backend as BackendPreference } });
const engine = core.engine!;
const info = engine.info();
const client = new OpenAI({ baseURL: `${core.url}/v1`, apiKey: core.token, maxRetries: 0 });

interface Run {
  ttftMs: number;
  decodeTokS: number;
  tokens: number;
  /** process CPU time (all threads: model, server, client) per generated token, ms */
  cpuMsPerToken?: number;
}

/** Runs `f` and adds the process's CPU time per token: steadier than wall time on a busy machine. */
async function withCpu(f: () => Promise<Run>): Promise<Run> {
  const c0 = process.cpuUsage();
  const r = await f();
  const c = process.cpuUsage(c0);
  return { ...r, cpuMsPerToken: (c.user + c.system) / 1000 / r.tokens };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Direct: the chat template rendered, then node-llama-cpp's own loop on a context of the same model, greedy. */
const prompt = engine.renderPrompt({ messages }).tokens;
const directCtx = await engine.model.createContext({ sequences: 1, contextSize: 4096, threads });
const directSeq = directCtx.getSequence();
async function direct(): Promise<Run> {
  await directSeq.clearHistory();
  const t0 = performance.now();
  let first = 0;
  let last = 0;
  let n = 0;
  // Rendering the chat template is part of answering a chat request, directly or not.
  const tokens = engine.renderPrompt({ messages }).tokens;
  for await (const tok of directSeq.evaluate(tokens as Token[], { temperature: 0 })) {
    void tok;
    last = performance.now();
    if (n === 0) first = last;
    if (++n >= TOKENS) break;
  }
  return { ttftMs: first - t0, decodeTokS: (n - 1) / ((last - first) / 1000), tokens: n };
}

/** Through the server: a streamed request; timings from the client's side of the socket. */
async function server(): Promise<Run> {
  // A fresh sequence state each round, as direct() has (no prefix reuse between rounds).
  const lease = await engine.gate.acquire([]);
  await lease.sequence.clearHistory();
  lease.release();
  const t0 = performance.now();
  const stream = await client.chat.completions.create({ model: info.modelId, messages, max_tokens: TOKENS, temperature: 0, stream: true, logprobs: true, stream_options: { include_usage: true } });
  let first = 0;
  let last = 0;
  let firstTokens = 0;
  let n = 0;
  let usage = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage.completion_tokens;
    const k = chunk.choices[0]?.logprobs?.content?.length ?? 0;
    if (k === 0) continue;
    last = performance.now();
    if (n === 0) {
      first = last;
      firstTokens = k;
    }
    n += k;
  }
  return { ttftMs: first - t0, decodeTokS: (usage - firstTokens) / ((last - first) / 1000), tokens: usage };
}

/** The same request from a client in a worker thread (its parsing off the server's JS thread). */
const worker = new Worker(new URL("./server-client-worker.mjs", import.meta.url), {
  workerData: { baseURL: `${core.url}/v1`, apiKey: core.token },
});
async function workerServer(): Promise<Run> {
  const lease = await engine.gate.acquire([]);
  await lease.sequence.clearHistory();
  lease.release();
  return new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.postMessage({ model: info.modelId, messages, maxTokens: TOKENS });
  });
}

await direct(); // warm-up all three
await server();
await workerServer();
const d: Run[] = [];
const s: Run[] = [];
const raw: Run[] = [];
for (let i = 0; i < ROUNDS; i++) {
  d.push(await withCpu(direct));
  s.push(await withCpu(server));
  raw.push(await workerServer());
}
const dT = median(d.map((r) => r.ttftMs));
const sT = median(s.map((r) => r.ttftMs));
const dR = median(d.map((r) => r.decodeTokS));
const sR = median(s.map((r) => r.decodeTokS));
console.log(`model ${info.modelId} (${info.backend}, ${info.gpuLayers} GPU layers, threads ${threads ?? "default"}), prompt ${prompt.length} tokens, ${TOKENS} tokens x ${ROUNDS} rounds (medians)`);
console.log(`tokens generated: direct ${d[0].tokens}, server ${s[0].tokens}`);
console.log(`TTFT      direct ${dT.toFixed(2)} ms   server ${sT.toFixed(2)} ms   ratio (direct/server, goal ≥ 0.95) ${(dT / sT).toFixed(3)}`);
console.log(`decode    direct ${dR.toFixed(1)} tok/s   server ${sR.toFixed(1)} tok/s   ratio (server/direct, goal ≥ 0.95) ${(sR / dR).toFixed(3)}`);
const dC = median(d.map((r) => r.cpuMsPerToken!));
const sC = median(s.map((r) => r.cpuMsPerToken!));
console.log(`CPU/token direct ${dC.toFixed(3)} ms   server+client ${sC.toFixed(3)} ms   ratio (direct/server) ${(dC / sC).toFixed(3)}`);
const rT = median(raw.map((r) => r.ttftMs));
const rR = median(raw.map((r) => r.decodeTokS));
console.log(`client in a worker thread: TTFT ${rT.toFixed(2)} ms ratio ${(dT / rT).toFixed(3)}; decode ${rR.toFixed(1)} tok/s ratio ${(rR / dR).toFixed(3)}`);
await worker.terminate();
await directCtx.dispose();
await core.close();
fs.rmSync(dataDir, { recursive: true, force: true });
