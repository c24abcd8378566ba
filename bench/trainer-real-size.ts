/**
 * Training at real sizes: for each backend and real-shaped model (random weights, real widths,
 * depths and vocabularies: models/tiny/shapes.ts), seconds per optimizer step of B × T tokens,
 * trained tokens per second, the fraction of the matMul peak measured in the same run (same
 * process, a product of the model's own widths: the native products' peak where the trainer uses
 * them, trainer/native/gemm.ts, with the backend's own beside it; else the backend's; measured
 * once before the steps and again after each step, whose own fraction is printed against it),
 * peak RSS, and the memory plan next to what was measured (the plan must not under-estimate).
 * CLAWRL_NATIVE_GEMM=0 runs the backend's products alone (the baseline before the native ones).
 *
 *   node --import tsx bench/trainer-real-size.ts [--backend wasm] [--shapes smollm2-360m,qwen2.5-0.5b,qwen3-1.7b]
 *        [--configs 1x128,4x256] [--steps 2] [--method binary] [--type q8_0] [--recompute compare|plan|all]
 *        [--ragged chat|long] [--layout packed|padded|compare]
 *
 * --recompute (issue 31): `plan` (default) runs steps as the trainer does, keeping the
 * activations of as many blocks as the memory plan allows for the micro-batch and recomputing
 * the rest in the backward; `all` recomputes every block (the trainer before issue 31);
 * `compare` runs both in the same process, alternating steps on the same model and adapter,
 * and prints both step times, their ratio, and each one's fraction of the matMul peak (FLOPs
 * counted as each run does them: a kept block has no recompute pass).
 *
 * --ragged (issue 31): a batch of B × T has sequences of different lengths, each ending in a
 * min(48, T/4)-token answer: `chat`, prompts spread over 16..T−48 tokens (the longest sequence
 * is T); `long`, one T-token sequence and B−1 of T/10. Without it every sequence is T tokens.
 * --layout: `packed` (no padding: one matrix of the real tokens per layer) or `padded` (the
 * [B, T] grid) forces the batch's layout (default: the backend's, packed on wasm); `compare`
 * runs both in the same process, alternating steps, and prints both: rows per step, step time,
 * the fraction of the matMul peak of the FLOPs each layout did and of the real tokens' FLOPs.
 *
 * Each (shape, config) runs in its own child process (tfjs has one engine per process; peak
 * RSS is per process). A step is what the live loop runs: samples with served log-probs, one
 * forward keeping block inputs, the head over every vocabulary slice, the block-by-block
 * backward (one recompute per block not kept), one AdamW update. FLOPs counted per step: 3 passes over
 * the blocks' linear weights (forward, recompute, backward to the activations: frozen weights
 * need no weight gradient), attention, the LoRA products, and 2 passes of the head (logits and
 * E_p[W]) over the scored rows.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs-core";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import { initBackend } from "../trainer/backend.js";
import { createLora, disposeLora } from "../trainer/lora/params.js";
import type { ModelConfig } from "../models/arch/config.js";
import { flopsPerStep } from "../models/arch/flops.js";
import { AdamW } from "../trainer/optim/adamw.js";
import { formatBytes } from "../models/plan/memoryPlan.js";
import { loadForTraining } from "../trainer/plan/loadForTraining.js";
import { packedLayout, setBatchLayout } from "../trainer/model/logprobs.js";
import { loraParamRecord, microBatches, trainSteps } from "../trainer/train/trainSteps.js";
import { syntheticSamples } from "../trainer/train/syntheticBatch.js";
import { nativeProductsFor } from "../trainer/native/gemm.js";

const { values } = parseArgs({
  options: {
    backend: { type: "string", default: "wasm" },
    shapes: { type: "string", default: "smollm2-360m,qwen2.5-0.5b,qwen3-1.7b" },
    configs: { type: "string", default: "1x128,4x256" },
    steps: { type: "string", default: "2" },
    method: { type: "string", default: "binary" },
    type: { type: "string", default: "q8_0" },
    rank: { type: "string", default: "16" },
    recompute: { type: "string", default: "plan" },
    ragged: { type: "string", default: "" },
    layout: { type: "string", default: "" },
    child: { type: "string" },
  },
});

interface ChildResult {
  shape: string;
  B: number;
  T: number;
  backend: string;
  device: string;
  placement: string;
  microBatchTokens: number;
  loadSeconds: number;
  stepSeconds: number[];
  /** Blocks kept (not recomputed) in the steps of stepSeconds. */
  keptBlocks: number;
  /** --recompute compare: the same step recomputing every block (the baseline), alternated with the others. */
  recomputeAllSeconds: number[] | null;
  /** --layout compare: the same steps on the padded grid, alternated with the packed ones (stepSeconds). */
  padded: { stepSeconds: number[]; keptBlocks: number; rows: number; flopsPerStep: number; recomputeFlops: number } | null;
  /** Rows per step of the run's layout (real tokens when packed), and the real tokens' FLOPs (packed). */
  rows: number;
  usefulFlopsPerStep: number;
  usefulRecomputeFlops: number;
  nLayer: number;
  tokensPerStep: number;
  trainedTokensPerStep: number;
  flopsPerStep: number;
  /** FLOPs of one pass recomputing every block (not done for kept blocks). */
  recomputeFlops: number;
  matmulPeakGflops: number;
  /** The backend's own matMul peak (the same as matmulPeakGflops without native products). */
  backendPeakGflops: number;
  nativeProducts: boolean;
  /** The same peak measured again right after each step of stepSeconds (the machine's speed drifts over a run). */
  stepPeakGflops: number[];
  peakRssBytes: number;
  planDeviceBytes: number;
  planHostBytes: number;
  wasmHeapBytes: number | null;
  gpuBytes: number | null;
}

/** Best GFLOP/s of a plain matMul at the model's own widths, [rows, D] × [D, F] (B operand transient, as in training). */
async function backendMatmulPeak(c: ModelConfig, rows: number): Promise<number> {
  let best = 0;
  for (const [K, M] of [
    [c.nEmbd, c.nFf],
    [c.nFf, c.nEmbd],
  ]) {
    const w = tf.randomNormal<tf.Rank.R2>([M, K]);
    const x = tf.randomNormal<tf.Rank.R2>([rows, K]);
    const once = async () => {
      const y = tf.tidy(() => tf.transpose(tf.matMul(w, tf.transpose(x))));
      await y.data();
      y.dispose();
    };
    await once();
    for (let r = 0; r < 3; r++) {
      const t0 = performance.now();
      for (let i = 0; i < 3; i++) await once();
      const s = (performance.now() - t0) / 1000 / 3;
      best = Math.max(best, (2 * rows * K * M) / s / 1e9);
    }
    tf.dispose([w, x]);
  }
  return best;
}

/**
 * Best GFLOP/s of the native products (trainer/native/gemm.ts) at the model's widths, as the
 * trainer calls them: x·Wᵀ (forward) and dy·W (backward) of the FFN's weights; null without them.
 */
function nativeMatmulPeak(c: ModelConfig, rows: number): (() => number) | null {
  const g = nativeProductsFor(tf.getBackend());
  if (!g) return null;
  const runs = [
    [c.nEmbd, c.nFf],
    [c.nFf, c.nEmbd],
  ].flatMap(([K, N]) => {
    const w = new Float32Array(N * K).map(() => Math.random() - 0.5);
    const x = new Float32Array(rows * K).map(() => Math.random() - 0.5);
    const dy = new Float32Array(rows * N).map(() => Math.random() - 0.5);
    const y = new Float32Array(rows * N);
    const dx = new Float32Array(rows * K);
    const flops = 2 * rows * K * N;
    return [
      { flops, run: () => g.nt(x, w, y, rows, N, K) },
      { flops, run: () => g.nn(dy, w, dx, rows, K, N) },
    ];
  });
  // Measured again after every step (stepPeakGflops) on the same arrays.
  return () => {
    let best = 0;
    for (const { flops, run } of runs) {
      run();
      for (let r = 0; r < 3; r++) {
        const t0 = performance.now();
        for (let i = 0; i < 3; i++) run();
        best = Math.max(best, flops / ((performance.now() - t0) / 1000 / 3) / 1e9);
      }
    }
    return best;
  };
}

/**
 * The peak a step's fraction is taken against: of the products the trainer runs (native where
 * they are used, else the backend's matMul), with the backend's own beside it.
 */
async function matmulPeak(c: ModelConfig, rows: number): Promise<{ gflops: number; backendGflops: number; native: boolean; again: () => Promise<number> }> {
  const backendGflops = await backendMatmulPeak(c, rows);
  const native = nativeMatmulPeak(c, rows);
  const again = native ? async () => native() : () => backendMatmulPeak(c, rows);
  return { gflops: native?.() ?? backendGflops, backendGflops, native: native !== null, again };
}

/** Total and answer lengths of the batch's sequences (--ragged). */
function batchShape(B: number, T: number): Array<{ len: number; prompt: number }> {
  if (!values.ragged) return Array.from({ length: B }, () => ({ len: T, prompt: Math.min(16, T / 4) }));
  const answer = Math.min(48, Math.floor(T / 4));
  if (values.ragged === "chat") {
    // Prompts spread over 16..T−answer (golden-ratio steps: no two alike), the first the longest.
    return Array.from({ length: B }, (_, b) => {
      const f = b === 0 ? 1 : (b * 0.6180339887) % 1;
      const prompt = Math.round(16 + f * (T - answer - 16));
      return { len: prompt + answer, prompt };
    });
  }
  if (values.ragged === "long") {
    const short = Math.max(answer + 8, Math.round(T / 10));
    return Array.from({ length: B }, (_, b) => (b === 0 ? { len: T, prompt: T - answer } : { len: short, prompt: short - answer }));
  }
  throw new Error(`--ragged must be chat or long, got '${values.ragged}'`);
}

/**
 * FLOPs of one step over these sequences in a layout, as its micro-batches run them (a padded
 * micro-batch pads to its own longest), and those of one recompute pass over every block.
 */
function layoutFlops(
  c: ModelConfig,
  shape: Array<{ len: number; prompt: number }>,
  rank: number,
  packed: boolean,
  microBatchTokens: number,
): { flops: number; recompute: number; rows: number } {
  setBatchLayout(packed ? "packed" : "padded");
  const groups = microBatches(
    shape.map((s) => ({ tokens: new Array<number>(s.len).fill(0) })),
    microBatchTokens,
  ).map((g) => g.map((s) => s.tokens.length));
  setBatchLayout(undefined);
  // flopsPerStep is linear in B: a packed micro-batch is the sum of its sequences alone.
  const body = (r: number) =>
    groups.reduce((a, g) => a + (packed ? g.reduce((x, len) => x + flopsPerStep(c, 1, len, 0, r), 0) : flopsPerStep(c, g.length, Math.max(...g), 0, r)), 0);
  const rows = groups.reduce((a, g) => a + (packed ? g.reduce((x, len) => x + len, 0) : g.length * Math.max(...g)), 0);
  const head = flopsPerStep(
    c,
    1,
    0,
    shape.reduce((a, s) => a + s.len - s.prompt, 0),
    0,
  );
  return { flops: body(rank) + head, recompute: body(0) / 3 + (body(rank) - body(0)) / 4, rows };
}

async function child(spec: string): Promise<void> {
  const [shape, cfg] = spec.split("@");
  const [B, T] = cfg.split("x").map(Number);
  const rank = Number(values.rank);
  const file = ensureShapeModel(shape, values.type as "q8_0");
  const backend = await initBackend(values.backend);
  const t0 = performance.now();
  const { model, plan, keptBlocksAt } = await loadForTraining(file, backend, { rank, maxContext: T, batchSize: B });
  const loadSeconds = (performance.now() - t0) / 1000;
  const c = model.config;
  const shapeOf = batchShape(B, T);
  const samples = syntheticSamples(c.nVocab, shapeOf);
  const layout = values.layout;
  if (!["", "packed", "padded", "compare"].includes(layout)) throw new Error(`--layout must be packed, padded or compare, got '${layout}'`);
  if (layout === "compare" && values.recompute === "compare") throw new Error("--layout compare and --recompute compare: one comparison at a time");
  // The run's layout (compare: packed, alternated with padded); default: the backend's.
  const mainLayout = layout === "compare" ? "packed" : layout === "" ? undefined : (layout as "packed" | "padded");
  setBatchLayout(mainLayout);
  const peak = await matmulPeak(c, Math.min(B * T, 512));
  const lora = createLora(model, { rank, alpha: 2 * rank });
  const optimizer = new AdamW(loraParamRecord(lora), { lr: 1e-4 });
  const state = { model, lora, optimizer };
  const mode = values.recompute;
  if (!["plan", "all", "compare"].includes(mode)) throw new Error(`--recompute must be plan, all or compare, got '${mode}'`);
  const base = { method: values.method as "binary", steps: 1, batchSize: B, microBatchTokens: plan.microBatchTokens };
  const opts = { ...base, keptBlocks: mode === "all" ? 0 : keptBlocksAt };
  const allOpts = { ...base, keptBlocks: 0 };
  const padded = async () => {
    setBatchLayout("padded");
    try {
      return (await trainSteps(state, samples, opts))[0];
    } finally {
      setBatchLayout(mainLayout);
    }
  };
  // Warm-up: kernels, heap growth (the kept run first: it holds the most; padded before packed: more rows).
  if (layout === "compare") await padded();
  await trainSteps(state, samples, opts);
  if (mode === "compare") await trainSteps(state, samples, allOpts);
  const stepSeconds: number[] = [];
  const stepPeakGflops: number[] = [];
  const recomputeAllSeconds: number[] = [];
  const paddedSeconds: number[] = [];
  let keptBlocks = 0;
  let paddedKept = 0;
  for (let i = 0; i < Number(values.steps); i++) {
    if (layout === "compare") {
      const p = await padded();
      paddedSeconds.push(p.seconds);
      paddedKept = p.keptBlocks ?? 0;
    }
    const [m] = await trainSteps(state, samples, opts);
    stepSeconds.push(m.seconds);
    stepPeakGflops.push(await peak.again());
    keptBlocks = m.keptBlocks ?? 0;
    if (mode === "compare") recomputeAllSeconds.push((await trainSteps(state, samples, allOpts))[0].seconds);
  }
  const scored = shapeOf.reduce((a, s) => a + s.len - s.prompt, 0);
  const mainPacked = packedLayout();
  const run = layoutFlops(c, shapeOf, rank, mainPacked, plan.microBatchTokens);
  const pad = layoutFlops(c, shapeOf, rank, false, plan.microBatchTokens);
  const useful = layoutFlops(c, shapeOf, rank, true, Infinity);
  const mem = tf.memory() as tf.MemoryInfo & { numBytesInGPUAllocated?: number; numBytesInGPU?: number };
  // The wasm backend's Emscripten module is not in its typings.
  const heap = tf.getBackend() === "wasm" ? (tf.backend() as unknown as { wasm: { HEAPU8: Uint8Array } }).wasm.HEAPU8.length : null;
  const result: ChildResult = {
    shape,
    B,
    T,
    backend: backend.name,
    device: backend.device,
    placement: `${plan.placement.layers}/${plan.placement.head}`,
    microBatchTokens: plan.microBatchTokens,
    loadSeconds,
    stepSeconds,
    keptBlocks,
    recomputeAllSeconds: mode === "compare" ? recomputeAllSeconds : null,
    padded:
      layout === "compare"
        ? { stepSeconds: paddedSeconds, keptBlocks: paddedKept, rows: pad.rows, flopsPerStep: pad.flops, recomputeFlops: pad.recompute }
        : null,
    rows: run.rows,
    usefulFlopsPerStep: useful.flops,
    usefulRecomputeFlops: useful.recompute,
    nLayer: c.nLayer,
    tokensPerStep: shapeOf.reduce((a, s) => a + s.len, 0),
    trainedTokensPerStep: scored,
    flopsPerStep: run.flops,
    recomputeFlops: run.recompute,
    matmulPeakGflops: peak.gflops,
    stepPeakGflops,
    backendPeakGflops: peak.backendGflops,
    nativeProducts: peak.native,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    planDeviceBytes: plan.needDeviceBytes,
    planHostBytes: plan.needHostBytes,
    wasmHeapBytes: heap,
    gpuBytes: mem.numBytesInGPUAllocated ?? mem.numBytesInGPU ?? null,
  };
  optimizer.dispose();
  disposeLora(lora);
  model.dispose();
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

/**
 * Each step's fraction of the peak measured right after it (on a shared machine the speed drifts
 * over a run, and a peak taken once at the start can sit in a fast or a slow spell): the median
 * of those and each one.
 */
function besideEachStep(x: ChildResult, flops: number): string {
  const f = x.stepSeconds.map((s, i) => (100 * flops) / s / 1e9 / x.stepPeakGflops[i]);
  const median = [...f].sort((a, b) => a - b)[Math.floor((f.length - 1) / 2)];
  return `beside each step ${median.toFixed(0)}% of the peak measured after it (median; ${f.map((v, i) => `${v.toFixed(0)}% of ${x.stepPeakGflops[i].toFixed(0)}`).join(", ")})`;
}

function parent(): void {
  const rows: ChildResult[] = [];
  for (const shape of values.shapes.split(",")) {
    process.stderr.write(`preparing ${shape} (${values.type})…\n`);
    ensureShapeModel(shape, values.type as "q8_0", { onProgress: () => undefined });
    for (const cfg of values.configs.split(",")) {
      process.stderr.write(`  ${shape} ${cfg} on ${values.backend}…\n`);
      const r = spawnSync(
        process.execPath,
        ["--import", "tsx", path.join(import.meta.dirname, "trainer-real-size.ts"), ...process.argv.slice(2), "--child", `${shape}@${cfg}`],
        {
          encoding: "utf8",
          maxBuffer: 64 * 2 ** 20,
        },
      );
      const line = r.stdout.split("\n").find((l) => l.startsWith("RESULT "));
      if (!line) {
        const why = (r.stderr.split("\n").find((l) => /cannot train|Error|Aborted/.test(l)) ?? `exit ${r.status}`).trim();
        console.log(`${shape} ${cfg}: did not run: ${why.slice(0, 300)}`);
        continue;
      }
      const x = JSON.parse(line.slice(7)) as ChildResult;
      rows.push(x);
      const s = Math.min(...x.stepSeconds);
      // FLOPs this run did: no recompute pass for the kept blocks.
      const flops = x.flopsPerStep - (x.recomputeFlops * x.keptBlocks) / x.nLayer;
      const gflops = flops / s / 1e9;
      const device = x.wasmHeapBytes ?? x.gpuBytes;
      const pct = (g: number) => `${((100 * g) / x.matmulPeakGflops).toFixed(0)}% of the matMul peak`;
      if (x.padded) {
        const p = x.padded;
        const sp = Math.min(...p.stepSeconds);
        const done = (f: number, r: number, kept: number) => f - (r * kept) / x.nLayer;
        const useful = (kept: number) => done(x.usefulFlopsPerStep, x.usefulRecomputeFlops, kept);
        const pc = (flops: number, secs: number) => `${((100 * flops) / secs / 1e9 / x.matmulPeakGflops).toFixed(0)}%`;
        const [fp, fq] = [done(p.flopsPerStep, p.recomputeFlops, p.keptBlocks), flops];
        console.log(
          `${x.shape.padEnd(13)} ${cfg.padEnd(6)} ${x.backend}${values.ragged ? ` ragged ${values.ragged}` : ""}, ${x.tokensPerStep} real tokens: ` +
            `padded ${p.rows} rows ${sp.toFixed(1)} s/step (${p.stepSeconds.map((v) => v.toFixed(1)).join(", ")}), ${(fp / 1e9).toFixed(0)} GFLOP done = ${pc(fp, sp)} of the matMul peak, ${pc(useful(p.keptBlocks), sp)} on real tokens; ` +
            `packed ${x.rows} rows ${s.toFixed(1)} s/step (${x.stepSeconds.map((v) => v.toFixed(1)).join(", ")}), ${(fq / 1e9).toFixed(0)} GFLOP = ${pc(fq, s)}, ${pc(useful(x.keptBlocks), s)} on real tokens; ` +
            `ratio ${(sp / s).toFixed(2)}x (same process, alternating steps; matMul peak ${x.matmulPeakGflops.toFixed(1)} GFLOP/s)`,
        );
      }
      if (x.recomputeAllSeconds) {
        const a = Math.min(...x.recomputeAllSeconds);
        const gAll = x.flopsPerStep / a / 1e9;
        console.log(
          `${x.shape.padEnd(13)} ${cfg.padEnd(6)} ${x.backend}: recompute every block ${a.toFixed(1)} s/step (${x.recomputeAllSeconds.map((v) => v.toFixed(1)).join(", ")}), ${pct(gAll)}; ` +
            `${x.keptBlocks} of ${x.nLayer} blocks kept ${s.toFixed(1)} s/step (${x.stepSeconds.map((v) => v.toFixed(1)).join(", ")}), ${pct(gflops)}; ` +
            `ratio ${(a / s).toFixed(2)}x (same process, alternating steps; matMul peak ${x.matmulPeakGflops.toFixed(1)} GFLOP/s)`,
        );
      }
      console.log(
        `${x.shape.padEnd(13)} ${cfg.padEnd(6)} ${x.backend}: ${s.toFixed(1)} s/step (best of ${x.stepSeconds.length}: ${x.stepSeconds.map((v) => v.toFixed(1)).join(", ")}; ${x.keptBlocks} of ${x.nLayer} blocks kept), ` +
          `${(x.trainedTokensPerStep / s).toFixed(1)} trained tok/s, ${gflops.toFixed(1)} GFLOP/s = ${pct(gflops)} ${x.matmulPeakGflops.toFixed(1)} GFLOP/s` +
          (x.nativeProducts ? ` (native products; ${x.backend}'s matMul peak ${x.backendPeakGflops.toFixed(1)})` : "") +
          `; ${besideEachStep(x, flops)}; ` +
          `weights ${x.placement}, micro-batch ${x.microBatchTokens}; load ${x.loadSeconds.toFixed(1)} s; peak RSS ${formatBytes(x.peakRssBytes)} (plan ${formatBytes(x.planHostBytes)})` +
          (device !== null ? `, ${x.wasmHeapBytes !== null ? "wasm heap" : "GPU"} ${formatBytes(device)} (plan ${formatBytes(x.planDeviceBytes)})` : ""),
      );
      const under = x.peakRssBytes > x.planHostBytes || (device !== null && device > x.planDeviceBytes);
      if (under) console.log(`  WARNING: the plan under-estimated this run`);
    }
  }
}

if (values.child) await child(values.child);
else parent();
