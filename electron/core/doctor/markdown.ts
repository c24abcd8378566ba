/** report.md (and the CLI's text output) from a doctor report: for bug reports and humans. */
import type { DoctorReport } from "../api/doctorReport.js";

const gib = (n: number | null) => (n === null ? "—" : `${(n / 2 ** 30).toFixed(1)} GiB`);
const num = (x: number | null | undefined, d = 1) => (x === null || x === undefined ? "—" : x >= 100 ? x.toFixed(0) : x.toFixed(d));
const cell = (s: string | null) => (s ?? "").replace(/\|/g, "\\|").replace(/\n/g, " ");

export function renderMarkdown(r: DoctorReport): string {
  const m = r.machine;
  const out: string[] = [];
  out.push(`# clawrl doctor (${r.mode})`, "");
  out.push(`${r.createdAt} · app ${r.app} · ${r.wallSeconds.toFixed(0)} s`, "");
  out.push("## What it means", "", ...r.meaning.lines.map((l) => `- ${l}`), "");
  out.push("How these are estimated:", "");
  out.push(`- serves: ${r.meaning.serves.how}`, `- learns: ${r.meaning.learns.how}`, `- learning cycle: ${r.meaning.learningCycle.how}`, "");
  out.push("## Machine", "");
  out.push(
    `- CPU: ${m.cpuModel}, ${m.cores} cores`,
    `- RAM: ${gib(m.ramFreeBytes)} available of ${gib(m.ramTotalBytes)}`,
    `- OS: ${m.os}`,
    `- Node: ${m.node}`,
    `- Load: ${m.loadAverage.toFixed(1)} (1-minute average at the start)${m.loadAverage > m.cores ? `: busier than its ${m.cores} cores, so the figures below read lower than on an idle machine` : ""}`,
  );
  for (const g of m.gpus) {
    const what =
      g.status === "ok"
        ? [
            g.devices.join(", ") || "(no device named)",
            g.driver ? `driver ${g.driver}` : "",
            g.vramTotalBytes ? `${gib(g.vramTotalBytes)} VRAM` : "",
            ...g.adapters.map(
              (a) =>
                `${a.backend}${a.software ? `, software (${a.software})` : ""}, maxBufferSize ${gib(a.maxBufferSize)}, maxStorageBufferBindingSize ${gib(a.maxStorageBufferBindingSize)}`,
            ),
          ]
            .filter(Boolean)
            .join("; ")
        : `${g.status}: ${g.reason ?? ""}${g.driver ? ` (NVIDIA driver ${g.driver})` : ""}`;
    out.push(`- ${g.route}: ${what}`);
  }
  out.push("", "## Inference (node-llama-cpp)", "");
  out.push("| backend | status | model | prompt tok/s | decode tok/s | layers on GPU | VRAM used | RSS | notes |", "|---|---|---|---|---|---|---|---|---|");
  for (const row of r.inference.rows) {
    if (row.runs.length === 0) out.push(`| ${row.backend} | ${row.status} | | | | | | | ${cell(row.reason)} |`);
    for (const x of row.runs) {
      out.push(
        `| ${row.backend} | ${row.status} | ${x.model} | ${num(x.promptTokensPerSecond)} (${x.promptTokens}) | ${num(x.decodeTokensPerSecond)} (${x.decodeTokens}) | ${x.gpuLayers}/${x.totalLayers ?? "?"} | ${x.vramUsedBytes === null ? "—" : gib(x.vramUsedBytes)} | ${gib(x.rssBytes)} | ${cell(row.devices.join(", "))}${x.threads ? ` ${x.threads} thread${x.threads === 1 ? "" : "s"}` : ""} |`,
      );
    }
  }
  out.push("", `The app would serve on: **${r.inference.pick.backend ?? "none"}**: ${r.inference.pick.why}`, "");
  out.push("## Training (tfjs)", "");
  out.push("| backend | status | device | matMul 512² GFLOP/s | 1024² | 2048² | notes |", "|---|---|---|---|---|---|---|");
  for (const row of r.training.rows) {
    const at = (n: number) => {
      const x = row.matmul.find((q) => q.n === n);
      return x ? (x.gflops !== null ? num(x.gflops) : `— (${x.note})`) : "";
    };
    out.push(`| ${row.backend} | ${row.status} | ${cell(row.device)} | ${at(512)} | ${at(1024)} | ${at(2048)} | ${cell(row.reason)} |`);
  }
  const t = r.training.train;
  out.push("");
  if (t) {
    out.push(
      `Trained on **${t.backend}** (${t.device}), ${t.shape} shape, ${t.batch} × ${t.context} tokens a step: **${num(t.trainedTokensPerSecond)} trained tokens/s** ` +
        `(${t.stepSeconds.toFixed(1)} s a step, ${t.firstStepOnly ? "the first step: includes warm-up, reads low" : `best of ${t.steps} after a warm-up step`}), ${num(t.gflops)} GFLOP/s${t.fractionOfPeak === null ? "" : ` = ${(100 * t.fractionOfPeak).toFixed(0)}% of its matMul peak`}; ` +
        `weights ${t.placement}; load ${t.loadSeconds.toFixed(1)} s; peak RSS ${gib(t.peakRssBytes)}.`,
    );
  } else out.push(`No training run: ${r.training.trainReason ?? "—"}.`);
  const p = r.training.plan;
  out.push(
    "",
    p
      ? `Memory plan for ${p.model} on ${p.backend}: ${p.fits ? "fits" : "does not fit"}: ${p.summary}.`
      : "Memory plan: no served or selected model (pass --model, or choose one with 'clawrl models use').",
  );
  const failed = r.probes.filter((x) => x.status === "failed");
  if (failed.length > 0) {
    out.push("", "## Failed probes", "");
    for (const f of failed) out.push(`- ${f.id}: ${f.reason}${f.exit ? ` (exit code ${f.exit.code ?? "—"}, signal ${f.exit.signal ?? "—"})` : ""}`);
  }
  return `${out.join("\n")}\n`;
}
