/**
 * The native products (trainer/native/gemm/) at a real shape's widths, as a training step calls
 * them: the FFN's and attention's projections forward (nt: x·Wᵀ) and backward (nn: dy·W), the
 * vocabulary head's, attention's per-head products and the LoRA factors', each at the 1 × 128
 * step's rows and at a cycle micro-batch's (16 × 81). Weights rotate over 4 copies, so they come
 * from memory as a step's do. Prints the median GFLOP/s of each (and of --against, another build
 * of the addon, called alternately in this one process: a kernel change measured against what it
 * replaced, with the machine's drift shared by both).
 *
 *   node --import tsx bench/native-products.ts [--shape qwen2.5-0.5b] [--reps 15] [--threads N]
 *        [--against path/to/other/gemm.node]
 *
 * To measure a change to kernels.cc: build the older tree's addon (git worktree add /tmp/old
 * <commit>; cd /tmp/old; npm run build:native) and pass --against /tmp/old/trainer/native/build/gemm.node.
 */
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { fill } from "../common/random/fill.js";
import { findShape } from "../models/tiny/shapes.js";
import { nativeGemmStatus, type NativeGemm } from "../trainer/native/gemm.js";

const { values } = parseArgs({
  options: {
    shape: { type: "string", default: "qwen2.5-0.5b" },
    reps: { type: "string", default: "15" },
    threads: { type: "string" },
    against: { type: "string" },
  },
});

const shape = findShape(values.shape);
if (!shape) throw new Error(`unknown shape '${values.shape}'`);
const st = nativeGemmStatus();
if (!st.loaded) throw new Error(`the native products are not built: ${st.why}`);
const builds: Array<[string, NativeGemm]> = [["this build", st.gemm]];
if (values.against) builds.push(["--against", createRequire(import.meta.url)(values.against) as NativeGemm]);
for (const [, g] of builds) g.setThreads(Number(values.threads ?? g.hardwareThreads));

type Form = "nt" | "nn" | "tn";
interface Case {
  what: string;
  form: Form;
  m: number;
  n: number;
  k: number;
}

/** What a step multiplies at `rows` tokens (forms and operand shapes as trainer/model calls them). */
function cases(rows: number, seqLen: number, seqs: number): Case[] {
  const { dim, ffn, heads, kvHeads, headDim } = shape!;
  const g = heads / kvHeads;
  const kv = kvHeads * headDim;
  const rank = 16;
  return [
    { what: "gate/up forward", form: "nt", m: rows, n: ffn, k: dim },
    { what: "down forward", form: "nt", m: rows, n: dim, k: ffn },
    { what: "gate/up backward", form: "nn", m: rows, n: dim, k: ffn },
    { what: "down backward", form: "nn", m: rows, n: ffn, k: dim },
    { what: "q/o forward", form: "nt", m: rows, n: dim, k: dim },
    { what: "q/o backward", form: "nn", m: rows, n: dim, k: dim },
    { what: "k/v forward", form: "nt", m: rows, n: kv, k: dim },
    { what: "head forward (chunk)", form: "nt", m: Math.min(rows, 512), n: 16384, k: dim },
    { what: "head backward (chunk)", form: "nn", m: Math.min(rows, 512), n: dim, k: 16384 },
    { what: `attention scores (×${seqs * kvHeads})`, form: "nt", m: g * seqLen, n: seqLen, k: headDim },
    { what: `attention values (×${seqs * kvHeads})`, form: "nn", m: g * seqLen, n: headDim, k: seqLen },
    { what: "LoRA x·A (gate/up)", form: "nn", m: rows, n: rank, k: dim },
    { what: "LoRA (x·A)·B (gate/up)", form: "nn", m: rows, n: ffn, k: rank },
    { what: "LoRA dy·Bᵀ (gate/up)", form: "nt", m: rows, n: rank, k: ffn },
    { what: "LoRA xᵀ·d (gate/up)", form: "tn", m: dim, n: rank, k: rows },
  ];
}

const reps = Number(values.reps);
console.log(`${values.shape}: native products (${st.gemm.isa}, ${values.threads ?? st.gemm.hardwareThreads} threads), median of ${reps} calls each, GFLOP/s`);
for (const [label, rows, seqLen, seqs] of [
  ["1 x 128", 128, 128, 1],
  ["16 x 81", 1296, 81, 16],
] as const) {
  console.log(`\n${label} (${rows} rows):`);
  for (const c of cases(rows, seqLen, seqs)) {
    const a = fill(c.form === "tn" ? c.k * c.m : c.m * c.k, 1);
    const bs = Array.from({ length: 4 }, (_, i) => fill(c.n * c.k, 2 + i));
    const out = new Float32Array(c.m * c.n);
    const times: number[][] = builds.map(() => []);
    for (let r = 0; r < reps + 1; r++) {
      builds.forEach(([, g], i) => {
        const t0 = performance.now();
        g[c.form](a, bs[r % bs.length], out, c.m, c.n, c.k);
        if (r > 0) times[i].push(performance.now() - t0); // the first call warms up
      });
    }
    const gflops = times.map((t) => (2 * c.m * c.n * c.k) / (t.sort((x, y) => x - y)[t.length >> 1] / 1000) / 1e9);
    const shapeText = `${c.form} [${c.m}×${c.k}]·[${c.k}×${c.n}]`;
    const cols = gflops.map((v) => v.toFixed(1).padStart(7)).join(" ");
    const ratio = gflops.length > 1 ? `  ${(gflops[0] / gflops[1]).toFixed(2)}x` : "";
    console.log(`  ${c.what.padEnd(32)} ${shapeText.padEnd(34)} ${cols}${ratio}`);
  }
}
if (builds.length > 1) console.log("\ncolumns: this build, --against; ratio: this build's rate over --against's");
