// Time to first token and decode speed through our server (HTTP + SSE, turn recording, token
// log-probs) against node-llama-cpp called directly in the same process, on the same model,
// prompt and greedy tokens. Goal: server ≥ 0.95 of direct.
//
// Wall clock on a busy machine is mostly scheduler noise, so besides wall-time ratios this
// prints CPU time per token, read per thread from /proc (schedstat, ns): the JS thread (where
// everything that is ours runs) and the whole server process (model threads included). The
// openai client runs in a child process, as a real client does, so its SSE parsing is not
// charged to the server. A third mode, `engine`, is Engine.generate without HTTP: it splits the
// server's overhead into engine and HTTP parts. The modes run interleaved, round after round,
// and the ratios are medians of the per-round ratios (with their quartiles).
//
// TTFT is the time to the first streamed token (a chunk carrying its log-prob, text or not), and
// decode counts the tokens after it: a mode whose tokens all arrived in one event prints
// "all at once" instead of a rate (it once printed NaN).
//
// Run: node --import tsx bench/server-vs-direct.ts [--model FILE | --shape ID] [--tokens N] [--rounds N] [--backend auto|cuda|vulkan|cpu]
// (default model: the tiny qwen2 test model; --shape qwen2.5-0.5b / qwen3-0.6b / ...: a random-weight model with that
// real model's shape and vocabulary, q8_0, generated once into .cache/models (models/tiny/shapeCache.ts);
// CLAWRL_THREADS sets CPU threads, default all cores)
import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startCore } from "../electron/core/core.js";
import type { BackendPreference } from "../electron/core/inference/backend.js";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import { tinyModel } from "../test/helpers/models.js";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    shape: { type: "string" },
    tokens: { type: "string", default: "128" },
    rounds: { type: "string", default: "9" },
    backend: { type: "string", default: "auto" },
    // Greedy by default (the same tokens in every mode); --temperature 0.7 --top-p 0.95 measures the app chat's defaults (seeded).
    temperature: { type: "string", default: "0" },
    "top-p": { type: "string", default: "1" },
  },
});
if (values.model && values.shape) throw new Error("--model and --shape exclude each other");
const TOKENS = Number(values.tokens);
const SAMPLING = { temperature: Number(values.temperature), topP: Number(values["top-p"]), seed: 7 };
const ROUNDS = Number(values.rounds);
if (!(TOKENS >= 2) || !(ROUNDS >= 1)) throw new Error("--tokens must be ≥ 2 and --rounds ≥ 1");
const threads = Number(process.env.CLAWRL_THREADS) || undefined;
const model = values.model ?? (values.shape ? ensureShapeModel(values.shape, "q8_0") : await tinyModel({ arch: "qwen2" }));
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-bench-svd-"));
const messages = [
  { role: "system" as const, content: "You are a helpful assistant." },
  { role: "user" as const, content: "Tell me a long story about a robot who learns to paint." },
];

// No learning loop: its trainer process (and the gate's own model instance) would compete for the cores being measured.
const core = await startCore({
  model,
  dataDir,
  token: "bench-token-1",
  uiDir: "",
  training: false,
  engine: { sequences: 1, maxContextSize: 4096, threads, backend: values.backend as BackendPreference },
});
const engine = core.engine!;
const info = engine.info();

interface Run {
  ttftMs: number;
  /** null: no token came after the first event (all arrived at once), so there is no rate */
  decodeTokS: number | null;
  tokens: number;
  /** CPU time per generated token, µs: this process's JS thread, and all its threads */
  jsUs: number;
  procUs: number;
}
type Timed = Omit<Run, "jsUs" | "procUs">;

/** Tokens per second after the first event; null when none came after it (never 0/0 = NaN). */
function rate(tokens: number, ms: number): number | null {
  return tokens > 0 && ms > 0 ? tokens / (ms / 1000) : null;
}

/** CPU time (ns) of this process's main (JS) thread and of all its threads, from /proc schedstat. */
function cpuNs(): { js: number; all: number } {
  let js = 0;
  let all = 0;
  for (const tid of fs.readdirSync("/proc/self/task")) {
    let ns: number;
    try {
      ns = Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      continue; // the thread ended meanwhile
    }
    all += ns;
    if (Number(tid) === process.pid) js = ns;
  }
  return { js, all };
}

async function measured(f: () => Promise<Timed>): Promise<Run> {
  const c0 = cpuNs();
  const r = await f();
  const c1 = cpuNs();
  return { ...r, jsUs: (c1.js - c0.js) / 1e3 / r.tokens, procUs: (c1.all - c0.all) / 1e3 / r.tokens };
}

/** Direct: the chat template rendered, then node-llama-cpp's own loop on a context of the same model, greedy. */
const prompt = engine.renderPrompt({ messages }).tokens;
const directCtx = await engine.model.createContext({ sequences: 1, contextSize: 4096, threads });
const directSeq = directCtx.getSequence();
async function direct(): Promise<Timed> {
  await directSeq.clearHistory();
  const t0 = performance.now();
  let first = 0;
  let last = 0;
  let n = 0;
  // Rendering the chat template is part of answering a chat request, directly or not.
  const tokens = engine.renderPrompt({ messages }).tokens;
  for await (const tok of directSeq.evaluate(tokens, { ...SAMPLING, topK: null as unknown as number, minP: 0 })) {
    void tok;
    last = performance.now();
    if (n === 0) first = last;
    if (++n >= TOKENS) break;
  }
  return { ttftMs: first - t0, decodeTokS: rate(n - 1, last - first), tokens: n };
}

/** A fresh sequence state each round, as direct() has (no prefix reuse between rounds). */
async function clearServingSequence(): Promise<void> {
  const lease = await engine.gate.acquire([]);
  await lease.sequence.clearHistory();
  lease.release();
}

/** Our engine without HTTP: what Engine.generate adds over node-llama-cpp's loop. */
async function engineOnly(): Promise<Timed> {
  await clearServingSequence();
  const t0 = performance.now();
  let first = 0;
  let last = 0;
  let firstTokens = 0;
  let n = 0;
  const r = await engine.generate(
    { messages, ...SAMPLING, maxTokens: TOKENS },
    {
      onEvent: (ev) => {
        if (ev.type !== "content" || ev.logprobs.length === 0) return;
        last = performance.now();
        if (n === 0) {
          first = last;
          firstTokens = ev.logprobs.length;
        }
        n += ev.logprobs.length;
      },
    },
  );
  const tokens = r.responseTokens.length;
  return { ttftMs: first - t0, decodeTokS: rate(tokens - firstTokens, last - first), tokens };
}

/** Through the server: a streamed request from the client process; timings from its side of the socket. */
const client: ChildProcess = fork(new URL("./server-vs-direct-client.mjs", import.meta.url), { stdio: ["ignore", "inherit", "inherit", "ipc"] });
function ask<T>(msg: object): Promise<T> {
  return new Promise((resolve, reject) => {
    // One listener of each a request: an "error" listener left behind per round would pile up.
    const onError = (err: Error) => {
      client.off("message", onMessage);
      reject(err);
    };
    const onMessage = (m: unknown) => {
      client.off("error", onError);
      const e = (m as { error?: string }).error;
      if (e) reject(new Error(`client: ${e}`));
      else resolve(m as T);
    };
    client.once("message", onMessage);
    client.once("error", onError);
    client.send(msg);
  });
}
await ask({ type: "init", baseURL: `${core.url}/v1`, apiKey: core.token });
async function server(): Promise<Timed> {
  await clearServingSequence();
  const r = await ask<{ ttftMs: number; decodeMs: number; decodeTokens: number; tokens: number }>({
    type: "run",
    model: info.modelId,
    messages,
    maxTokens: TOKENS,
    ...SAMPLING,
  });
  return { ttftMs: r.ttftMs, decodeTokS: rate(r.decodeTokens, r.decodeMs), tokens: r.tokens };
}

const modes = { direct, engine: engineOnly, server } as const;
type Mode = keyof typeof modes;
for (const f of Object.values(modes)) await f(); // warm-up
const runs: Record<Mode, Run[]> = { direct: [], engine: [], server: [] };
// The order turns each round: a mode that always ran right after another context's decode could
// pay for it (caches, llama.cpp's threads waking) and read as slower.
const order = Object.keys(modes) as Mode[];
for (let i = 0; i < ROUNDS; i++)
  for (let k = 0; k < order.length; k++) {
    const m = order[(i + k) % order.length];
    runs[m].push(await measured(modes[m]));
  }

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))];
};
const med = (xs: number[]) => quantile(xs, 0.5);
/** Median of per-round ratios, with the quartiles: rounds are interleaved, so pairs share the machine's load. */
function ratio(num: (i: number) => number | null, den: (i: number) => number | null): string {
  const rs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const a = num(i);
    const b = den(i);
    if (a !== null && b !== null && Number.isFinite(a / b)) rs.push(a / b);
  }
  if (rs.length === 0) return "n/a";
  return `${med(rs).toFixed(3)} [${quantile(rs, 0.25).toFixed(2)}–${quantile(rs, 0.75).toFixed(2)}]${rs.length < ROUNDS ? ` (${rs.length} of ${ROUNDS} rounds)` : ""}`;
}
/** Median decode rate, or why there is none. */
function medRate(xs: Run[]): string {
  const r = xs.map((x) => x.decodeTokS).filter((x): x is number => x !== null);
  if (r.length === 0) return "all at once (no tokens after the first event)";
  return `${med(r).toFixed(1)} tok/s`;
}
const d = runs.direct;
console.log(
  `model ${info.modelId} (${info.backend}, ${info.gpuLayers} GPU layers, threads ${threads ?? "default"}), prompt ${prompt.length} tokens, ${TOKENS} tokens x ${ROUNDS} rounds, load average ${os.loadavg()[0].toFixed(1)}`,
);
console.log(`tokens generated: direct ${d[0].tokens}, engine ${runs.engine[0].tokens}, server ${runs.server[0].tokens}`);
console.log(`medians; ratios are per-round medians [quartiles], 1 = as fast as direct, goal ≥ 0.95`);
for (const m of ["engine", "server"] as const) {
  const r = runs[m];
  console.log(`${m}:`);
  console.log(
    `  TTFT          direct ${med(d.map((x) => x.ttftMs)).toFixed(2)} ms   ${m} ${med(r.map((x) => x.ttftMs)).toFixed(2)} ms   ratio ${ratio(
      (i) => d[i].ttftMs,
      (i) => r[i].ttftMs,
    )}`,
  );
  console.log(
    `  decode        direct ${medRate(d)}   ${m} ${medRate(r)}   ratio ${ratio(
      (i) => r[i].decodeTokS,
      (i) => d[i].decodeTokS,
    )}`,
  );
  console.log(
    `  CPU/token JS  direct ${med(d.map((x) => x.jsUs)).toFixed(0)} µs   ${m} ${med(r.map((x) => x.jsUs)).toFixed(0)} µs   ratio ${ratio(
      (i) => d[i].jsUs,
      (i) => r[i].jsUs,
    )}`,
  );
  console.log(
    `  CPU/token all direct ${med(d.map((x) => x.procUs)).toFixed(0)} µs   ${m} ${med(r.map((x) => x.procUs)).toFixed(0)} µs   ratio ${ratio(
      (i) => d[i].procUs,
      (i) => r[i].procUs,
    )}`,
  );
}
console.log("(CPU/token JS: this process's JS thread; all: every thread of this process, model included; the server's client is another process)");
await new Promise((resolve) => {
  client.once("exit", resolve);
  client.send({ type: "exit" });
});
await directCtx.dispose();
await core.close();
fs.rmSync(dataDir, { recursive: true, force: true });
