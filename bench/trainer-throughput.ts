/**
 * Trainer throughput: trained tokens per second (forward + backward + AdamW update of the
 * LoRA) for the tiny test model and a ~100M-parameter-shaped random model, and the fraction
 * of the machine's matmul peak that reaches, the peak measured by a tfjs matMul loop in the
 * same run (same backend, same process).
 *   node --import tsx bench/trainer-throughput.ts [--backend wasm] [--dim 1024] [--layers 12] [--tokens 128] [--steps 3]
 * The big model comes from the tiny-model generator (4 heads / 2 KV heads, ffn = 2·dim,
 * byte-level vocabulary), stored F16 in .cache/bench/ and dequantized to f32 by the trainer:
 * dim 1024 × 12 layers = 113M parameters in the linear layers.
 * Steps use served log-probs (live-loop samples), so a step is exactly one forward, one
 * backward and one update; the on-policy lp_old pass of offline samples adds one forward.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs-core";
import { writeTinyModel } from "../models/tiny/generate.js";
import { initBackend } from "../trainer/backend.js";
import { createLora, disposeLora } from "../trainer/lora/params.js";
import { loadBaseModel, type BaseModel } from "../trainer/model/index.js";
import { AdamW } from "../trainer/optim/adamw.js";
import type { PreparedSample } from "../trainer/train/tokenize.js";
import { loraParamRecord, trainSteps } from "../trainer/train/trainSteps.js";

const { values } = parseArgs({
  options: {
    backend: { type: "string", default: "wasm" },
    dim: { type: "string", default: "1024" },
    layers: { type: "string", default: "12" },
    tokens: { type: "string", default: "128" },
    steps: { type: "string", default: "3" },
  },
});
const choice = await initBackend(values.backend);
console.log(`backend: ${choice.name} (${choice.device})`);

/** Peak GFLOP/s of a plain 2-D tf.matMul on this backend: best of a few square sizes. */
function matmulPeak(): { gflops: number; size: number } {
  let best = { gflops: 0, size: 0 };
  for (const n of [256, 512, 1024]) {
    const a = tf.randomNormal<tf.Rank.R2>([n, n], 0, 1, "float32", 1);
    const b = tf.randomNormal<tf.Rank.R2>([n, n], 0, 1, "float32", 2);
    tf.tidy(() => void tf.matMul(a, b).dataSync());
    const reps = n >= 1024 ? 3 : 8;
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) tf.tidy(() => void tf.matMul(a, b).dataSync());
    const s = (performance.now() - t0) / 1000;
    const gflops = (2 * n ** 3 * reps) / s / 1e9;
    console.log(`  matMul ${n}x${n}: ${gflops.toFixed(2)} GFLOP/s`);
    if (gflops > best.gflops) best = { gflops, size: n };
    tf.dispose([a, b]);
  }
  return best;
}

function modelFile(dim: number, layers: number, type: "f32" | "f16"): string {
  const dir = path.resolve(import.meta.dirname, "..", ".cache", "bench");
  const file = path.join(dir, `throughput-llama-${type}-d${dim}-l${layers}.gguf`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dir, { recursive: true });
    console.log(`  generating ${path.basename(file)}...`);
    writeTinyModel(file, { arch: "llama", dim, layers, type, seed: 7 });
  }
  return file;
}

/** FLOPs per trained token: forward 2·P over the linear layers and the output projection,
 * plus attention (QKᵀ and AV over T/2 positions on average), and the backward pass w.r.t.
 * activations costs the same again (the frozen base needs no weight gradients; LoRA's own
 * are negligible at rank 16). */
function flopsPerToken(m: BaseModel, T: number): number {
  const c = m.config;
  const linear = c.nLayer * (c.nEmbd * c.nHead * c.headDim * 2 + c.nEmbd * c.nHeadKv * (c.headDim + c.headDimV) + 3 * c.nEmbd * c.nFf);
  const attn = c.nLayer * 2 * c.nHead * c.headDim * T; // 2 matmuls × T/2 positions × 2 FLOPs
  const fwd = 2 * (linear + c.nEmbd * c.nVocab) + attn;
  return 2 * fwd;
}

function linearParams(m: BaseModel): number {
  const c = m.config;
  return c.nLayer * (c.nEmbd * c.nHead * c.headDim * 2 + c.nEmbd * c.nHeadKv * (c.headDim + c.headDimV) + 3 * c.nEmbd * c.nFf);
}

async function measure(label: string, file: string, T: number, steps: number) {
  const model = await loadBaseModel(file);
  const V = model.config.nVocab;
  let s = 12345;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648), s);
  const prompt = 16;
  const samples: PreparedSample[] = [0, 1].map(() => ({
    tokens: Array.from({ length: T }, () => rnd() % V),
    promptLength: prompt,
    reward: 1,
    servedLogprobs: new Array(T - prompt).fill(-5),
    teachers: [],
    truncated: false,
  }));
  const lora = createLora(model, { rank: 16, alpha: 32, seed: 1 });
  const optimizer = new AdamW(loraParamRecord(lora), { lr: 1e-4 });
  const state = { model, lora, optimizer };
  await trainSteps(state, samples, { method: "binary", steps: 1, batchSize: 2 }); // warm-up (kernels, wasm memory)
  const ms = await trainSteps(state, samples, { method: "binary", steps, batchSize: 2 });
  const secs = ms.reduce((a, m) => a + m.seconds, 0);
  const tokens = ms.reduce((a, m) => a + m.tokens, 0);
  const tps = tokens / secs;
  const gflops = (tps * flopsPerToken(model, T)) / 1e9;
  const params = linearParams(model);
  optimizer.dispose();
  disposeLora(lora);
  model.dispose();
  return { label, params, tps, gflops, T };
}

const T = Number(values.tokens);
const steps = Number(values.steps);
console.log("matmul peak (baseline):");
const peak = matmulPeak();
const rows = [
  await measure("tiny (llama dim 64, 2 layers)", modelFile(64, 2, "f32"), T, steps),
  await measure(
    `big (llama dim ${values.dim}, ${values.layers} layers)`,
    modelFile(Number(values.dim), Number(values.layers), "f16"),
    T,
    Math.max(1, Math.min(steps, 2)),
  ),
];
console.log(`\npeak: ${peak.gflops.toFixed(2)} GFLOP/s (matMul ${peak.size}x${peak.size})`);
for (const r of rows) {
  console.log(
    `${r.label}: ${(r.params / 1e6).toFixed(1)}M linear params, batch 2 x ${r.T} tokens: ${r.tps.toFixed(1)} trained tokens/s, ` +
      `${r.gflops.toFixed(2)} GFLOP/s = ${((100 * r.gflops) / peak.gflops).toFixed(1)}% of the matmul peak`,
  );
}
