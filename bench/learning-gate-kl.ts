/**
 * The experiment behind the publish gate's default KL bound (electron/core/training/gate.ts).
 * On a real trained model (stories260K), the trainer process trains one batch (4 samples, ±1
 * rewards, 4 steps, rank 16) from a fresh adapter at several learning rates, and measures mean
 * KL(candidate || base) over held-out prompts' answer positions, and how often the most likely
 * next token changed (a visible change in greedy answers).
 *
 *   node --import tsx bench/learning-gate-kl.ts [model.gguf]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { WorkerClient } from "../electron/core/training/workerClient.js";
import { SampleTokenizer } from "../trainer/train/tokenize.js";
import { storiesModelPath } from "../test/helpers/cli.js";

const modelPath = process.argv[2] ?? storiesModelPath();
if (!modelPath) throw new Error("stories260K.gguf not found: pass a model path");
const tok = await SampleTokenizer.open(modelPath);
const seq = (prompt: string, answer: string) => {
  const p = tok.tokenizeResponse(prompt, false);
  const a = tok.tokenizeResponse(answer, false);
  return { p, a };
};
const train = [
  ["Once upon a time, there was a little girl named Lily.", " She liked to play in the park with her dog.", 1],
  ["One day, a boy named Tom went to the store.", " He bought a big red ball and was very happy.", 1],
  ["The cat sat on the mat.", " The dog was sad and angry and ran away.", -1],
  ["Sue had a toy car.", " She broke it and cried all day long.", -1],
] as const;
const heldOut = [
  ["Once upon a time, there was a big tree.", " The tree had many green leaves."],
  ["Ben and Mia went to the beach.", " They built a sand castle together."],
  ["There was a little bird in the sky.", " It sang a happy song every morning."],
  ["Mom made a cake for the party.", " Everyone ate it and smiled."],
  ["A small fish lived in the pond.", " It swam fast all day."],
  ["The sun was hot and bright.", " Tim went to play outside."],
] as const;
const samples = train.map(([q, a, r]) => {
  const s = seq(q, a);
  return { prompt_tokens: s.p, response_tokens: s.a, reward: r };
});
const prompts = heldOut.map(([q, a]) => {
  const s = seq(q, a);
  return { tokens: [...s.p, ...s.a], start: s.p.length };
});
await tok.dispose();

const w = new WorkerClient({ onLog: () => {} });
const out = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-gate-kl-"));
const ready = await w.request({
  type: "init",
  modelPath,
  settings: { method: "combined", rank: 16, alpha: 32, lr: 1e-4, maxContext: 256, teacher: "current", seed: 0 },
  resumeDir: null,
});
console.log(`model ${path.basename(modelPath)}, trainer backend ${ready.backend} (${ready.device})`);
console.log("lr       steps  KL(cand||base) nats/token   liked lp Δ   disliked lp Δ");
const rows: Array<{ lr: number; kl: number }> = [];
let i = 0;
for (const lr of [1e-5, 1e-4, 1e-3, 1e-2]) {
  for (const steps of [4, 16]) {
    await w.request({ type: "load", dir: null });
    const dir = path.join(out, `c${i++}`);
    await w.request({ type: "train", runId: `r${i}`, samples, steps, lr, batchSize: 4, outDir: dir });
    const liked = samples.filter((s) => s.reward === 1).map((s) => ({ tokens: [...s.prompt_tokens, ...s.response_tokens], start: s.prompt_tokens.length }));
    const disliked = samples.filter((s) => s.reward === -1).map((s) => ({ tokens: [...s.prompt_tokens, ...s.response_tokens], start: s.prompt_tokens.length }));
    const ev = await w.request({ type: "evaluate", runId: `r${i}`, servingAdapter: null, prompts, liked, disliked });
    const d = (c: { candidate: number | null; serving: number | null }) => ((c.candidate ?? 0) - (c.serving ?? 0)).toFixed(4);
    console.log(
      `${lr.toExponential(0).padEnd(8)} ${String(steps).padEnd(6)} ${(ev.kl ?? 0).toExponential(2).padEnd(26)} ${d(ev.liked).padEnd(12)} ${d(ev.disliked)}`,
    );
    rows.push({ lr, kl: ev.kl ?? 0 });
  }
}
await w.stop();
fs.rmSync(out, { recursive: true, force: true });
const base = rows[0].kl || 1e-12;
console.log(`KL ratio, largest step vs smallest (same run): ${(rows[rows.length - 1].kl / base).toExponential(2)}`);
