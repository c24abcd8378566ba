/**
 * f32 matMul GFLOP/s of the webgpu backend on the adapter it picks, at 512², 1024², 2048², two
 * ways: queued (many products, one read-back at the end) and reading each product back; the
 * wasm backend in the same run as the baseline. Each backend runs in its own child process
 * (tfjs keeps one engine per process). webgpu is asked for by name, so a software adapter is
 * used when there is no GPU.
 *   node --import tsx bench/webgpu-matmul.ts [--sizes 512,1024,2048] [--seconds 2]
 *   CLAWRL_WEBGPU_ROUTE=swiftshader|opengles|default picks a software route (trainer/webgpu/dawn.ts).
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../trainer/backend.js";

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

const sizes = arg("sizes", "512,1024,2048").split(",").map(Number);
const seconds = Number(arg("seconds", "2"));
/** A size is left out when one warm-up product of it would take longer than this. */
const MAX_PRODUCT_S = 30;

interface Row {
  n: number;
  queued?: number;
  perRead?: number;
  note?: string;
}

async function child(backend: string): Promise<void> {
  const choice = await initBackend(backend);
  const rows: Row[] = [];
  let lastMs = 0;
  let lastN = 0;
  for (const n of sizes) {
    const predicted = lastN ? lastMs * (n / lastN) ** 3 : 0;
    if (predicted / 1000 > MAX_PRODUCT_S) {
      rows.push({ n, note: `left out: one product would take ~${(predicted / 1000).toFixed(0)} s` });
      continue;
    }
    const a = tf.randomUniform<tf.Rank.R2>([n, n], -1, 1, "float32", 1);
    const b = tf.randomUniform<tf.Rank.R2>([n, n], -1, 1, "float32", 2);
    await a.data();
    await b.data();
    // Warm-up: compiles the shader, and sizes the runs to about `seconds` each.
    let t0 = performance.now();
    const w = tf.matMul(a, b);
    await w.data();
    w.dispose();
    lastMs = performance.now() - t0;
    lastN = n;
    const reps = Math.max(1, Math.min(200, Math.round((seconds * 1000) / Math.max(lastMs, 0.01))));
    const flops = 2 * n ** 3 * reps;
    // Queued: every product enqueued, only the last read (the queue runs them in order).
    t0 = performance.now();
    let last: tf.Tensor | null = null;
    for (let i = 0; i < reps; i++) {
      last?.dispose();
      last = tf.matMul(a, b);
    }
    await last!.data();
    last!.dispose();
    const queued = flops / ((performance.now() - t0) / 1000) / 1e9;
    // Each product read back before the next.
    t0 = performance.now();
    for (let i = 0; i < reps; i++) {
      const c = tf.matMul(a, b);
      await c.data();
      c.dispose();
    }
    const perRead = flops / ((performance.now() - t0) / 1000) / 1e9;
    rows.push({ n, queued, perRead });
    tf.dispose([a, b]);
  }
  console.log(JSON.stringify({ device: choice.device, skipped: choice.skipped, rows }));
}

function fmt(x: number | undefined): string {
  if (x === undefined) return "—";
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

if (process.argv[2] === "--child") {
  await child(process.argv[3]);
  process.exit(0);
} else {
  const self = path.resolve(import.meta.dirname, "webgpu-matmul.ts");
  for (const backend of ["webgpu", "wasm"]) {
    const r = spawnSync(process.execPath, ["--import", "tsx", self, "--child", backend, ...process.argv.slice(2)], { encoding: "utf8", timeout: 20 * 60_000 });
    const line = r.stdout.trim().split("\n").pop() ?? "";
    let res: { device: string; skipped: Array<{ name: string; why: string }>; rows: Row[] };
    try {
      res = JSON.parse(line) as typeof res;
    } catch {
      const why = (r.stderr.split("\n").find((l) => /Error/.test(l)) ?? r.stderr.trim().split("\n").pop() ?? "").trim();
      console.log(`${backend}: did not run (exit ${r.status}): ${why}`);
      continue;
    }
    console.log(`${backend}: ${res.device}`);
    for (const s of res.skipped.filter((s) => s.why !== "not preferred")) console.log(`  skipped ${s.name}: ${s.why}`);
    for (const row of res.rows) {
      if (row.note) console.log(`  ${row.n}²: ${row.note}`);
      else console.log(`  ${row.n}²: queued ${fmt(row.queued)} GFLOP/s, read each ${fmt(row.perRead)} GFLOP/s`);
    }
  }
}
