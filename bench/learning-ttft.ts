/**
 * Time to first token while the trainer trains vs idle, in one run: a real core serving a
 * model, streaming chat requests one after another; first idle, then while the learning loop
 * trains on a queue of feedback (several batches back to back, each published and hot-swapped),
 * then idle again. Prints p50/p95 of both, their ratio (goal ≤ 1.3) and the swap pauses.
 *
 *   node --import tsx bench/learning-ttft.ts                 # the tiny qwen2 test model
 *   node --import tsx bench/learning-ttft.ts --big           # a ~100M-parameter-shaped random model (dim 1024, 12 layers)
 *   node --import tsx bench/learning-ttft.ts --model FILE.gguf
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startCore, type RunningCore } from "../electron/core/core.js";
import { tinyModel } from "../test/helpers/models.js";
import { liveCore } from "./lib/liveCore.js";

const args = process.argv.slice(2);
const big = args.includes("--big");
const mi = args.indexOf("--model");
const modelPath = mi >= 0 ? args[mi + 1] : await tinyModel(big ? { arch: "qwen2", dim: 1024, layers: 12 } : { arch: "qwen2" });
const N = Number(process.env.BENCH_N ?? 24);
const batches = Number(process.env.BENCH_BATCHES ?? 4);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-ttft-"));
const core: RunningCore = await startCore({
  model: modelPath,
  dataDir,
  token: "bench",
  uiDir: "",
  engine: { maxContextSize: 512, sequences: 2, threads: Number(process.env.CLAWRL_THREADS ?? 1) },
  // Every candidate publishes: the bench measures serving under training and swaps, not the gate.
  training: { stepsPerRun: Number(process.env.BENCH_STEPS ?? (big ? 3 : 10)), gate: { klBound: 1e9, tolerance: 1e9 } },
});
const { api, get, ask } = liveCore(core, 16);
await api("PATCH", "/api/settings", { batchSize: 2, maxTrainContext: 256 });

/** Streams one answer; returns ms to the first content token and the turn id. */
const ttft = ask;

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
};
const trainingNow = async () => ["training", "evaluating", "publishing", "starting"].includes((await get("/api/status")).training.state);

for (let i = 0; i < 3; i++) await ttft(`warm up ${i}`);
const idle: number[] = [];
for (let i = 0; i < N; i++) idle.push((await ttft(`idle question ${i}`)).ms);

console.error(`idle: ${idle.length} answers, p50 ${q(idle, 0.5).toFixed(1)} ms; feeding ${batches} batches`);
// Feedback for several batches: the supervisor trains them back to back.
for (let i = 0; i < batches * 2; i++) {
  const { turnId } = await ttft(`question for training ${i}`);
  await api("POST", "/api/feedback", { turnId, thumbs: i % 2 ? "down" : "up" });
}
// Wait for the trainer to start stepping (process start and model load are not training).
for (;;) {
  const t = (await get("/api/status")).training;
  if (t.state === "training" && (t.step ?? 0) >= 1) break;
  await new Promise((r) => setTimeout(r, 100));
}
console.error("trainer is stepping; measuring");
const during: number[] = [];
let i = 0;
while (during.length < N || (await trainingNow())) {
  const busy = await trainingNow();
  const r = await ttft(`busy question ${i++}`);
  if (busy) during.push(r.ms);
  if (!busy && during.length >= N) break;
  if (i > 20 * N) break;
}
console.error(`training: ${during.length} answers; waiting for the last runs`);
// Let the last runs finish, then idle again (drift check).
for (let k = 0; k < 600 && (await trainingNow()); k++) await new Promise((r) => setTimeout(r, 200));
for (let k = 0; k < N; k++) idle.push((await ttft(`idle again ${k}`)).ms);

const ck = (await get("/api/checkpoints")).checkpoints;
const pauses = ck.map((c) => c.swapPauseMs).filter((x): x is number => x !== null);
const st = (await get("/api/status")).training;
await core.close();
fs.rmSync(dataDir, { recursive: true, force: true });

const f = (x: number) => x.toFixed(1).padStart(7);
console.log(`model ${path.basename(modelPath)}; trainer ${st.backend} (${st.device}); ${os.cpus().length} CPUs`);
console.log(`TTFT ms          p50      p95     n`);
console.log(`idle         ${f(q(idle, 0.5))}  ${f(q(idle, 0.95))}  ${idle.length}`);
console.log(`training     ${f(q(during, 0.5))}  ${f(q(during, 0.95))}  ${during.length}`);
console.log(`ratio p50 ${(q(during, 0.5) / q(idle, 0.5)).toFixed(2)}, p95 ${(q(during, 0.95) / q(idle, 0.95)).toFixed(2)} (goal <= 1.3)`);
console.log(
  `checkpoints published: ${ck.filter((c) => c.verdict === "published").length}; swap pause ms: ${pauses.map((p) => p.toFixed(2)).join(", ") || "none"}${pauses.length ? ` (max ${Math.max(...pauses).toFixed(2)})` : ""}`,
);
