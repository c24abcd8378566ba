import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { doctorReportSchema, type DoctorReport } from "../../electron/core/cli/commands/doctor.js";
import { runDoctor } from "../../electron/core/doctor/run.js";
import { repoRoot, runCli, runCliAsync, tempDir } from "../helpers/cli.js";

const crashProbe = path.join(repoRoot, "test", "cli", "fixtures", "doctorCrashProbe.ts");

test("clawrl doctor --help names its options", () => {
  const r = runCli(["doctor", "--help"]);
  assert.equal(r.code, 0);
  for (const o of ["--quick", "--deep", "--json", "--model FILE|ID", "--out DIR", "--webgpu"]) assert.ok(r.stdout.includes(o), o);
});

test("clawrl doctor refuses --quick with --deep and an unknown --only", () => {
  assert.equal(runCli(["doctor", "--quick", "--deep"]).code, 2);
  const r = runCli(["doctor", "--only", "gpu"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--only takes inference, training, not 'gpu'/);
});

test("a probe child that aborts or hangs is a failed row, and doctor finishes", async () => {
  const lines: string[] = [];
  const report = await runDoctor({
    mode: "quick",
    only: [],
    extraProbes: [
      { id: "training.simulated", section: "training", name: "simulated", script: crashProbe, request: { mode: "abort" }, timeoutMs: 60_000 },
      { id: "inference.simulated-hang", section: "inference", name: "simulated-hang", script: crashProbe, request: { mode: "hang" }, timeoutMs: 4_000 },
    ],
    log: (l) => lines.push(l),
  });
  doctorReportSchema.parse(report);
  const aborted = report.training.rows.find((r) => r.backend === "simulated");
  assert.equal(aborted?.status, "failed");
  assert.match(aborted.reason ?? "", /crashed \(SIGABRT\).*unsupported toolchain/);
  const rec = report.probes.find((p) => p.id === "training.simulated");
  assert.equal(rec?.exit?.signal, "SIGABRT");
  const hung = report.inference.rows.find((r) => r.backend === "simulated-hang");
  assert.equal(hung?.status, "failed");
  assert.match(hung.reason ?? "", /hung or too slow here: no answer within 4 s/);
  // The sections not asked for are rows that say so; the verdicts are still there.
  assert.ok(report.inference.rows.filter((r) => ["cuda", "vulkan", "cpu"].includes(r.backend)).every((r) => r.status === "skipped"));
  assert.ok(report.meaning.lines.length >= 3);
  assert.ok(
    lines.some((l) => l.startsWith("training.simulated: failed")),
    lines.join("\n"),
  );
});

test("clawrl doctor --quick --json: the report validates, every backend has a row, the CPU rows have figures", { timeout: 420_000 }, async () => {
  const out = tempDir("clawrl-doctor-");
  const t0 = performance.now();
  const r = await runCliAsync(["doctor", "--quick", "--json", "--out", out], {}, 400_000);
  const seconds = (performance.now() - t0) / 1000;
  assert.equal(r.code, 0, r.stderr);
  const report: DoctorReport = doctorReportSchema.parse(JSON.parse(r.stdout));
  // Progress: a line per probe on stderr.
  for (const id of ["inference.cpu", "training.wasm"]) assert.match(r.stderr, new RegExp(`doctor: ${id.replace(".", "\\.")}: ok`));

  const inf = new Map(report.inference.rows.map((x) => [x.backend, x]));
  for (const b of ["cuda", "vulkan", "cpu"]) {
    const row = inf.get(b);
    assert.ok(row, `inference row ${b}`);
    if (row.status !== "ok") assert.ok(row.reason, `${b} says why not`);
  }
  const cpu = inf.get("cpu")!;
  assert.equal(cpu.status, "ok", cpu.reason ?? "");
  const run = cpu.runs.find((x) => x.model === "qwen3-0.6b");
  assert.ok(run && run.promptTokensPerSecond > 0 && run.decodeTokensPerSecond > 0 && run.gpuLayers === 0);
  assert.ok(report.inference.pick.backend && report.inference.pick.why.length > 0);

  const tr = new Map(report.training.rows.map((x) => [x.backend, x]));
  for (const b of ["tfjs-node-gpu", "webgpu", "tfjs-node", "wasm", "cpu"]) {
    const row = tr.get(b);
    assert.ok(row, `training row ${b}`);
    if (row.status !== "ok") assert.ok(row.reason, `${b} says why not`);
  }
  const wasm = tr.get("wasm")!;
  assert.equal(wasm.status, "ok", wasm.reason ?? "");
  for (const n of [1024, 2048]) assert.ok((wasm.matmul.find((m) => m.n === n)?.gflops ?? 0) > 0, `wasm matMul ${n}²`);
  // A software WebGPU adapter is not measured unless asked for by name.
  const adapter = report.machine.gpus.find((g) => g.route === "webgpu")?.adapters[0];
  if (adapter?.software) assert.equal(tr.get("webgpu")?.status, "skipped");

  const t = report.training.train;
  assert.ok(t, report.training.trainReason ?? "");
  assert.equal(t.shape, "qwen2.5-0.5b");
  assert.ok(t.trainedTokensPerSecond > 0 && t.gflops > 0);
  // With the native products (built at npm install where a compiler is) the step is not a
  // fraction of the backend's matMul peak, and the report says which products ran.
  if (/frozen-weight products native \((avx2|generic)\)/.test(t.device)) assert.equal(t.fractionOfPeak, null);
  else assert.ok((t.fractionOfPeak ?? 0) > 0, t.device);

  assert.ok(report.meaning.lines.length >= 3);
  assert.match(report.meaning.lines[0], /^Serves: /);
  assert.match(report.meaning.lines[1], /^Learns: /);
  assert.match(report.meaning.lines[2], /^One learning cycle/);
  assert.ok(report.machine.cores > 0 && report.machine.ramTotalBytes > 0);

  // The files a bug report carries.
  doctorReportSchema.parse(JSON.parse(fs.readFileSync(path.join(out, "report.json"), "utf8")));
  const md = fs.readFileSync(path.join(out, "report.md"), "utf8");
  assert.match(md, /## What it means/);
  assert.match(md, /\| cpu \| ok \| qwen3-0\.6b \|/);
  console.log(`doctor --quick took ${seconds.toFixed(0)} s here`);
});
