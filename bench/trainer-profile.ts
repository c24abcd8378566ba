/**
 * Where a training step's time goes (issue 31): one real-shaped model (random weights,
 * models/tiny/shapes.ts) loaded as bench/trainer-real-size.ts's child loads it, one warm-up
 * step, one plain timed step, then one step with every kernel of the backend timed. The wasm
 * backend is synchronous, so a kernel's wall time is its cost. Prints, sorted, with the share of
 * the profiled step: time and work per kernel (matMuls split by what they are: frozen linear,
 * LoRA rank-r product, attention, vocabulary head), per phase (from the call stack: blocks
 * forward, head forward, loss, head gradient, backward recompute, backward gradients, gradient
 * sum, AdamW), the top rows by (phase, kernel, shapes), and the time outside any kernel (host
 * uploads of streamed weights, reads, JS). On a loaded machine read the shares, not the times.
 *
 *   node --import tsx bench/trainer-profile.ts [--shape qwen2.5-0.5b] [--layers N] [--config 1x128] [--type q8_0]
 *        [--rank 16] [--method binary] [--recompute plan|all] [--top 30] [--no-stacks]
 *        [--ab <switch>|all [--pairs 3]] [--against path/to/other/gemm.node]
 *
 * --no-stacks skips the per-phase attribution (a stack trace per kernel call; its own cost is
 * measured and left out of the shares either way). --ab runs, after the warm-up and before the
 * profile, `pairs` pairs of steps alternating a switch off and on in this one process (the
 * change as it was before, then as it is now: SWITCHES below) and prints both step times and
 * their ratio; the profile then runs with the switch on. `--against` another build of the native
 * addon (as bench/native-products.ts takes it) adds the switch "against": the products (nt, nn,
 * tn), AdamW's update and the head's row softmax from that build (off; where it lacks the row
 * softmax, tfjs's) or from this one (on), everything else from this one, so that a kernel change
 * is measured inside a step: `--against /tmp/old/trainer/native/build/gemm.node --ab against`.
 */
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs-core";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import { initBackend } from "../trainer/backend.js";
import { createLora, disposeLora } from "../trainer/lora/params.js";
import { AdamW } from "../trainer/optim/adamw.js";
import { loadForTraining } from "../trainer/plan/loadForTraining.js";
import { loraParamRecord, trainSteps } from "../trainer/train/trainSteps.js";
import { syntheticBatch } from "../trainer/train/syntheticBatch.js";
import { FrozenBase } from "../trainer/model/weights.js";
import * as head from "../trainer/model/head.js";
import * as adamw from "../trainer/optim/adamw.js";
import * as fastMatmul from "../trainer/model/fast-matmul.js";
import * as swigluModule from "../trainer/model/swiglu.js";
import * as ropeModule from "../trainer/model/rope.js";
import * as loraLinearModule from "../trainer/model/lora-linear.js";
import * as nativeAddon from "../trainer/native/gemm.js";
import { nativeGemmStatus, type NativeGemm } from "../trainer/native/gemm.js";
import * as wasmHeap from "../trainer/wasm/heap.js";

// A module a tree from before it lacks (this script profiles older trees too).
const normModule: Record<string, unknown> = await import("../trainer/model/norm.js").catch(() => ({}));
const softmaxModule: Record<string, unknown> = await import("../trainer/model/attention-softmax.js").catch(() => ({}));
const attentionModule: Record<string, unknown> = await import("../trainer/model/attention-host.js").catch(() => ({}));

/** Changes measured against what they replaced (--ab): each sets the new path on (true) or off. */
const SWITCHES: Record<string, ((on: boolean) => void) | undefined> = {
  // Looked up by name, so this script also profiles a tree from before the change.
  "head-fused": (head as Record<string, unknown>).setFusedHeadSlices as ((on: boolean) => void) | undefined,
  "head-native": (head as Record<string, unknown>).setNativeHeadSlices as ((on: boolean) => void) | undefined,
  "adamw-host": (adamw as Record<string, unknown>).setFusedAdamW as ((on: boolean) => void) | undefined,
  "sized-transpose": (fastMatmul as Record<string, unknown>).setSizedTranspose as ((on: boolean) => void) | undefined,
  "native-all": (fastMatmul as Record<string, unknown>).setNativeAllProducts as ((on: boolean) => void) | undefined,
  "heap-views": (wasmHeap as Record<string, unknown>).setHeapViews as ((on: boolean) => void) | undefined,
  "adamw-native": (adamw as Record<string, unknown>).setNativeAdamW as ((on: boolean) => void) | undefined,
  "swiglu-native": (swigluModule as Record<string, unknown>).setNativeSwiglu as ((on: boolean) => void) | undefined,
  "rope-native": (ropeModule as Record<string, unknown>).setNativeRope as ((on: boolean) => void) | undefined,
  "lora-fused": (loraLinearModule as Record<string, unknown>).setFusedLora as ((on: boolean) => void) | undefined,
  "norm-native": normModule.setNativeRmsNorm as ((on: boolean) => void) | undefined,
  "softmax-native": softmaxModule.setNativeCausalSoftmax as ((on: boolean) => void) | undefined,
  "attention-host": attentionModule.setHostAttention as ((on: boolean) => void) | undefined,
};

const { values } = parseArgs({
  options: {
    backend: { type: "string", default: "wasm" },
    shape: { type: "string", default: "qwen2.5-0.5b" },
    layers: { type: "string" },
    config: { type: "string", default: "1x128" },
    type: { type: "string", default: "q8_0" },
    rank: { type: "string", default: "16" },
    method: { type: "string", default: "binary" },
    recompute: { type: "string", default: "plan" },
    top: { type: "string", default: "30" },
    "no-stacks": { type: "boolean", default: false },
    ab: { type: "string" },
    pairs: { type: "string", default: "3" },
    against: { type: "string" },
  },
});

interface Row {
  ms: number;
  calls: number;
  /** FLOPs for products, output elements for the rest. */
  work: number;
}

const add = (m: Map<string, Row>, key: string, ms: number, work: number) => {
  const r = m.get(key) ?? { ms: 0, calls: 0, work: 0 };
  r.ms += ms;
  r.calls++;
  r.work += work;
  m.set(key, r);
};

const [B, T] = values.config.split("x").map(Number);
const rank = Number(values.rank);
const file = ensureShapeModel(values.shape, values.type as "q8_0", values.layers ? { layers: Number(values.layers) } : {});
const backend = await initBackend(values.backend);
const { model, plan, keptBlocksAt } = await loadForTraining(file, backend, { rank, maxContext: T, batchSize: B });
const c = model.config;
const samples = syntheticBatch(c.nVocab, B, T);
const lora = createLora(model, { rank, alpha: 2 * rank });
const optimizer = new AdamW(loraParamRecord(lora), { lr: 1e-4 });
const state = { model, lora, optimizer };
const opts = {
  method: values.method as "binary",
  steps: 1,
  batchSize: B,
  microBatchTokens: plan.microBatchTokens,
  keptBlocks: values.recompute === "all" ? 0 : keptBlocksAt,
};

// --- what a matMul is, from its shapes --------------------------------------------------------
const headRows = new Set([model.weights.headChunkRows, c.nVocab % model.weights.headChunkRows]);
function matMulKind(a: number[], b: number[], ta: boolean, tb: boolean): { kind: string; flops: number } {
  const M = ta ? a[a.length - 1] : a[a.length - 2];
  const K = ta ? a[a.length - 2] : a[a.length - 1];
  const N = tb ? b[b.length - 2] : b[b.length - 1];
  const batch = Math.max(
    a.slice(0, -2).reduce((x, y) => x * y, 1),
    b.slice(0, -2).reduce((x, y) => x * y, 1),
  );
  const dims = [M, K, N];
  const kind = dims.includes(rank)
    ? "lora"
    : dims.some((d) => headRows.has(d))
      ? "head"
      : dims.includes(c.headDim) || dims.includes(c.headDimV)
        ? "attention"
        : "linear";
  return { kind, flops: 2 * batch * M * K * N };
}

// --- phases, from the call stack --------------------------------------------------------------
const PHASES: Array<[RegExp, string]> = [
  [/\bat (AdamW\.applyGradients|clipByGlobalNorm)\b/, "adamw"],
  [/\bat headGradient\b/, "head gradient"],
  [/\bat headForward\b/, "head forward"],
  [/\bat (lossGradient|ppoClipLoss|topkOpdLoss)\b/, "loss"],
  [/\bat backwardBody\b/, "backward"],
  [/\bat runBody\b/, "blocks forward"],
  [/\bat (studentForward|finalNorm)\b/, "final norm"],
  [/\bat step\b.*trainSteps/, "gradient sum"],
];
function phaseOf(stack: string): string {
  for (const [re, name] of PHASES) {
    if (!re.test(stack)) continue;
    if (name !== "backward") return name;
    // tf.grads first runs the function (the recompute), then back-propagates.
    return /backpropagateGradients/.test(stack) ? "backward: gradients" : /replayGrads/.test(stack) ? "backward: replay" : "backward: recompute";
  }
  return "other";
}

// --- kernel timers ----------------------------------------------------------------------------
let on = false;
const withStacks = !values["no-stacks"];
const byKernel = new Map<string, Row>();
const byPhase = new Map<string, Row>();
const byRow = new Map<string, Row>();
let kernelMs = 0;
let overheadMs = 0;
type KFunc = tf.KernelConfig["kernelFunc"];
for (const k of tf.getKernelsForBackend(tf.getBackend())) {
  const inner: KFunc = k.kernelFunc;
  const wrapped: KFunc = (args) => {
    if (!on) return inner(args);
    const o0 = performance.now();
    const stack = withStacks ? (new Error().stack ?? "") : "";
    const t0 = performance.now();
    const out = inner(args);
    const t1 = performance.now();
    const ins = Object.values(args.inputs).map((x) => (x as tf.TensorInfo).shape);
    const outs = Array.isArray(out) ? out : [out];
    let name = k.kernelName;
    let work = outs.reduce((s, x) => s + x.shape.reduce((p, d) => p * d, 1), 0);
    if (name === "BatchMatMul" || name === "_FusedMatMul") {
      const at = args.attrs as { transposeA?: boolean; transposeB?: boolean };
      const m = matMulKind(ins[0], ins[1], !!at.transposeA, !!at.transposeB);
      name = `${name}[${m.kind}${at.transposeA || at.transposeB ? `, T${at.transposeA ? "a" : ""}${at.transposeB ? "b" : ""}` : ""}]`;
      work = m.flops;
    }
    const phase = withStacks ? phaseOf(stack) : "-";
    const ms = t1 - t0;
    kernelMs += ms;
    add(byKernel, name, ms, work);
    add(byPhase, phase, ms, work);
    add(byRow, `${phase.padEnd(20)} ${name} ${ins.map((s) => `[${s.join(",")}]`).join("·")}`, ms, work);
    overheadMs += performance.now() - t1 + (t0 - o0);
    return out;
  };
  tf.unregisterKernel(k.kernelName, k.backendName);
  tf.registerKernel({ ...k, kernelFunc: wrapped });
}
// Host work outside kernels: streamed weights and vocabulary slices uploaded, rows gathered.
const hostMs = new Map<string, Row>();
for (const m of ["layer", "headChunk", "embed", "outputRows"] as const) {
  const proto = FrozenBase.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const f = proto[m];
  proto[m] = function (this: unknown, ...a: unknown[]) {
    if (!on) return f.apply(this, a);
    const t0 = performance.now();
    const kBefore = kernelMs;
    try {
      return f.apply(this, a);
    } finally {
      add(hostMs, `host ${m}`, performance.now() - t0 - (kernelMs - kBefore), 0);
    }
  };
}

// The native products (trainer/native/): their own time and rate, apart from the reads and
// uploads around them, which stay in "rest outside kernels".
const nativeMs = new Map<string, Row>();
{
  // The addon's exports are read-only: the cached status gets a wrapper instead.
  const st = nativeGemmStatus();
  if (st.loaded) {
    const g = st.gemm;
    // The build whose products run: this one, or --against's while the "against" switch is off.
    let products: NativeGemm = g;
    if (values.against) {
      const other = createRequire(import.meta.url)(values.against) as NativeGemm;
      other.setThreads(g.hardwareThreads);
      const setHeadNative = (head as Record<string, unknown>).setNativeHeadSlices as ((on: boolean) => void) | undefined;
      SWITCHES.against = (thisBuild) => {
        products = thisBuild ? g : other;
        // A build without the head's row softmax leaves it to tfjs while it runs.
        if (typeof other.softmaxRows !== "function") setHeadNative?.(thisBuild);
      };
    }
    const timed =
      (fn: "nt" | "nn" | "tn"): NativeGemm["nt"] =>
      (a, b, c, m, n, k, accumulate) => {
        if (!on) return products[fn](a, b, c, m, n, k, accumulate);
        const t0 = performance.now();
        products[fn](a, b, c, m, n, k, accumulate);
        add(nativeMs, `native ${fn} MatMul [${m}×${k}]·[${k}×${n}]`, performance.now() - t0, 2 * m * n * k);
      };
    // A tree from before the "tn" product (this script profiles older trees too) has none to wrap.
    const tn = typeof (g as Partial<NativeGemm>).tn === "function" ? { tn: timed("tn") } : {};
    // AdamW's loop, SwiGLU, RoPE, RMSNorm, the causal softmax and the head's row softmax pass
    // through untimed (AdamW shows in "Whole calls" below); AdamW's and the head's from the
    // build the "against" switch picks. Looked up by name, as SWITCHES are: a tree from before
    // them has no such helpers.
    const bound = (name: string, build = g) =>
      ((nativeAddon as Record<string, unknown>)[name] as ((g: NativeGemm) => object | null) | undefined)?.(build) ?? {};
    const switched = (name: string) => {
      const parts = bound(name) as Record<string, (...a: unknown[]) => unknown>;
      return Object.fromEntries(
        Object.keys(parts).map((k) => [k, (...a: unknown[]) => ((products as unknown as typeof parts)[k] ?? parts[k]).apply(products, a)]),
      );
    };
    const optim = {
      ...switched("nativeOptimizerOf"),
      ...bound("nativeSwigluOf"),
      ...bound("nativeRopeOf"),
      ...bound("nativeRmsNormOf"),
      ...bound("nativeCausalSoftmaxOf"),
      ...switched("nativeSoftmaxRowsOf"),
    };
    st.gemm = {
      nt: timed("nt"),
      nn: timed("nn"),
      ...tn,
      ...optim,
      setThreads: (n) => {
        g.setThreads(n);
        if (products !== g) products.setThreads(n);
      },
      isa: g.isa,
      hardwareThreads: g.hardwareThreads,
      accumulates: g.accumulates,
    } as NativeGemm;
  }
}

// Whole calls, kernels included (the host AdamW is a JS loop, outside any kernel).
const wholeMs = new Map<string, Row>();
{
  const proto = AdamW.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const f = proto.applyGradients;
  proto.applyGradients = function (this: unknown, ...a: unknown[]) {
    if (!on) return f.apply(this, a);
    const t0 = performance.now();
    try {
      return f.apply(this, a);
    } finally {
      add(wholeMs, "AdamW.applyGradients", performance.now() - t0, 0);
    }
  };
}

process.stderr.write(`${values.shape} ${values.config}: ${backend.device}, weights ${plan.placement.layers}/${plan.placement.head}; warm-up step…\n`);
if (values.recompute !== "all") await trainSteps(state, samples, { ...opts, keptBlocks: 0 }); // both paths' kernels
const [warm] = await trainSteps(state, samples, opts);
const [plain] = await trainSteps(state, samples, opts);
if (values.ab) {
  const named = values.ab === "all" ? Object.values(SWITCHES).filter((f) => f !== undefined) : [SWITCHES[values.ab]];
  if (named.some((f) => !f) || named.length === 0) throw new Error(`--ab: unknown switch '${values.ab}' (all, ${Object.keys(SWITCHES).join(", ")})`);
  const sw = (on: boolean) => named.forEach((f) => f!(on));
  const off: number[] = [];
  const onS: number[] = [];
  for (let i = 0; i < Number(values.pairs); i++) {
    sw(false);
    off.push((await trainSteps(state, samples, opts))[0].seconds);
    sw(true);
    onS.push((await trainSteps(state, samples, opts))[0].seconds);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(", ");
  console.log(
    `--ab ${values.ab}: before ${f(off)} s, after ${f(onS)} s (alternating, one process); median ${med(off).toFixed(2)} → ${med(onS).toFixed(2)} s, ` +
      `${(med(off) / med(onS)).toFixed(3)}x`,
  );
}
Error.stackTraceLimit = 200;
on = true;
const t0 = performance.now();
const [prof] = await trainSteps(state, samples, opts);
const wall = performance.now() - t0;
on = false;

const stepMs = wall - overheadMs; // the profiled step without the profiler's own cost
const pct = (ms: number) => `${((100 * ms) / stepMs).toFixed(1).padStart(5)}%`;
const fmtWork = (name: string, r: Row) =>
  /MatMul/.test(name)
    ? `${(r.work / 1e9).toFixed(2).padStart(7)} GFLOP ${(r.work / 1e6 / r.ms).toFixed(1).padStart(6)} GFLOP/s`
    : `${(r.work / 1e6).toFixed(1).padStart(7)} M elts`;
const table = (title: string, m: Map<string, Row>, top = Infinity, work = true) => {
  console.log(`\n${title}`);
  [...m.entries()]
    .sort((a, b) => b[1].ms - a[1].ms)
    .slice(0, top)
    .forEach(([k, r]) =>
      console.log(`  ${pct(r.ms)} ${(r.ms / 1000).toFixed(3).padStart(8)} s ${String(r.calls).padStart(6)}× ${work ? fmtWork(k, r) + "  " : ""}${k}`),
    );
};

const matmulMs = [...byKernel.entries()].filter(([k]) => /MatMul/.test(k)).reduce((s, [, r]) => s + r.ms, 0);
const matmulFlops = [...byKernel.entries()].filter(([k]) => /MatMul/.test(k)).reduce((s, [, r]) => s + r.work, 0);
const hostTotal = [...hostMs.values()].reduce((s, r) => s + r.ms, 0);
const nativeTotal = [...nativeMs.values()].reduce((s, r) => s + r.ms, 0);
const nativeFlops = [...nativeMs.values()].reduce((s, r) => s + r.work, 0);
console.log(
  `${values.shape} ${values.config} on ${backend.device}; weights ${plan.placement.layers}/${plan.placement.head}, ` +
    `${prof.keptBlocks ?? 0} of ${c.nLayer} blocks kept; steps: warm-up ${warm.seconds.toFixed(2)} s, plain ${plain.seconds.toFixed(2)} s, ` +
    `profiled ${(wall / 1000).toFixed(2)} s of which the profiler ${(overheadMs / 1000).toFixed(2)} s (left out below: step = ${(stepMs / 1000).toFixed(2)} s)`,
);
console.log(
  `kernels ${pct(kernelMs)} (matMuls ${pct(matmulMs)}, ${(matmulFlops / 1e9).toFixed(1)} GFLOP at ${(matmulFlops / 1e6 / matmulMs).toFixed(1)} GFLOP/s; ` +
    `other kernels ${pct(kernelMs - matmulMs)}), host weights/rows ${pct(hostTotal)}, native products ${pct(nativeTotal)}` +
    `${nativeTotal > 0 ? ` (${(nativeFlops / 1e9).toFixed(1)} GFLOP at ${(nativeFlops / 1e6 / nativeTotal).toFixed(1)} GFLOP/s)` : ""}, ` +
    `rest outside kernels ${pct(stepMs - kernelMs - hostTotal - nativeTotal)}`,
);
table("By kernel (matMuls by kind; T: transposed-operand flags):", byKernel);
if (withStacks) table("By phase:", byPhase);
table("Host work outside kernels:", hostMs, Infinity, false);
if (nativeMs.size > 0) table("Native products (by shape):", nativeMs, 12);
table("Whole calls (kernels included; the profiler's own cost too):", wholeMs, Infinity, false);
table(`Top ${values.top} (phase, kernel, input shapes):`, byRow, Number(values.top));

optimizer.dispose();
disposeLora(lora);
model.dispose();
