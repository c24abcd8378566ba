#!/usr/bin/env node
/**
 * Prints the figures of a GPU proof run (scripts/gpu/proof.sh) from the doctor reports it
 * wrote: inference tok/s per node-llama-cpp backend, trainer matMul GFLOP/s per backend, the
 * LoRA step, and why a row failed. `node scripts/gpu/summary.mjs OUT_DIR`
 */
import fs from "node:fs";
import path from "node:path";

const out = process.argv[2] ?? process.env.OUT ?? ".";
const read = (p) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(out, p), "utf8"));
  } catch {
    return null;
  }
};
const f = (x, d = 1) => (typeof x === "number" ? x.toFixed(d) : "-");
const inf = read("inference/report.json");
const tr = read("training/report.json");
const m = (tr ?? inf)?.machine;
if (m) {
  // Each report probed its own routes (--only): cuda and vulkan from inference, webgpu from training.
  const route = (name) => (name === "webgpu" ? (tr ?? inf) : (inf ?? tr)).machine.gpus.find((g) => g.route === name);
  console.log(
    `machine: ${m.cpuModel}, ${m.cores} cores; ${["cuda", "vulkan", "webgpu"]
      .map(route)
      .filter(Boolean)
      .map((g) => `${g.route}: ${g.status}${g.devices?.length ? ` [${g.devices.join(", ")}]` : ""}${g.reason ? ` (${g.reason})` : ""}`)
      .join("; ")}`,
  );
}
if (inf) {
  console.log("inference (node-llama-cpp):");
  for (const r of inf.inference.rows) {
    if (r.runs.length === 0) console.log(`  ${r.backend}: ${r.status}${r.reason ? ` (${r.reason})` : ""}`);
    for (const run of r.runs)
      console.log(
        `  ${r.backend} ${run.model}: prefill ${f(run.promptTokensPerSecond)} tok/s, decode ${f(run.decodeTokensPerSecond)} tok/s, layers on GPU ${run.gpuLayers}/${run.totalLayers ?? "?"}, load ${f(run.loadSeconds)} s, threads ${run.threads ?? "-"}`,
      );
  }
  console.log(`  app's pick: ${inf.inference.pick.backend} (${inf.inference.pick.why})`);
} else console.log("inference: no report");
if (tr) {
  console.log("training (trainer backends, f32 matMul):");
  for (const r of tr.training.rows)
    console.log(
      `  ${r.backend}: ${r.status}${r.device ? ` on ${r.device}` : ""}${r.matmul.length ? ` ${r.matmul.map((x) => `${x.n}² ${x.gflops === null ? "left out" : `${f(x.gflops)} GFLOP/s`}`).join(", ")}` : ""}${r.reason ? ` (${r.reason})` : ""}`,
    );
  const t = tr.training.train;
  if (t)
    console.log(
      `  LoRA step on ${t.backend} (${t.device}), ${t.shape} ${t.batch}x${t.context}: ${f(t.stepSeconds, 2)} s/step (best of ${t.steps}), ${f(t.trainedTokensPerSecond)} trained tok/s, ${f(t.gflops)} GFLOP/s = ${f((t.fractionOfPeak ?? NaN) * 100)}% of its matMul peak, load ${f(t.loadSeconds)} s, placement ${t.placement}`,
    );
  else console.log(`  LoRA step: none (${tr.training.trainReason})`);
} else console.log("training: no report");
