import fs from "node:fs";
import path from "node:path";
import { dataPaths, defaultDataDir } from "../../config/paths.js";
import { renderMarkdown } from "../../doctor/markdown.js";
import { runDoctor, type DoctorSection } from "../../doctor/run.js";
import { CliError, stringOpt, UsageError, type CommandSpec } from "../command.js";

export { doctorReportSchema, type DoctorReport } from "../../api/doctorReport.js";

const SECTIONS: readonly DoctorSection[] = ["inference", "training"];

export const doctor: CommandSpec = {
  name: "doctor",
  usage: "[--quick|--deep] [--json] [--model FILE|ID] [--out DIR] [--webgpu] [--only inference,training]",
  summary:
    "Measure what this machine can do: its CPU, RAM and GPUs (CUDA, Vulkan, WebGPU), each inference backend (loads and decodes a real-shaped model in a child process: prompt and decode tokens/s), each trainer backend (matMul GFLOP/s; trained tokens/s on the best), the memory plan's verdict, and what it means (largest model that serves and that learns here, one learning cycle's time). Every probe runs in a child process with a timeout: a backend that crashes is a failed row.",
  options: {
    quick: { type: "boolean", description: "the short run (default; ~2 min on 2 cores): Qwen3-0.6B shape for inference, Qwen2.5-0.5B shape for training" },
    deep: { type: "boolean", description: "also Qwen3-1.7B for inference, trains the Qwen3-1.7B shape, longer measurements" },
    json: { type: "boolean", description: "print the report as JSON (schema: doctorReportSchema in electron/core/api/doctorReport.ts)" },
    model: {
      type: "string",
      value: "FILE|ID",
      description: "the served/selected model: a GGUF file, an installed or catalog id (default: the one chosen with 'models use'); nothing is downloaded",
    },
    out: { type: "string", value: "DIR", description: "also write DIR/report.md and DIR/report.json (for bug reports)" },
    webgpu: { type: "boolean", description: "measure WebGPU on a software adapter too (as CLAWRL_TF_BACKEND=webgpu or CLAWRL_WEBGPU_ROUTE do)" },
    only: { type: "string", value: "LIST", description: "measure only these sections: inference, training (comma-separated)" },
    "data-dir": { type: "string", value: "DIR", description: "data directory whose installed models --model names (default: the app's)" },
  },
  async run(args) {
    if (args.values.quick && args.values.deep) throw new UsageError("--quick and --deep exclude each other");
    let only: DoctorSection[] | undefined;
    const onlyArg = stringOpt(args, "only");
    if (onlyArg !== undefined) {
      only = onlyArg
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean) as DoctorSection[];
      const bad = only.find((s) => !SECTIONS.includes(s));
      if (bad || only.length === 0) throw new UsageError(`--only takes ${SECTIONS.join(", ")}${bad ? `, not '${bad}'` : ""}`);
    }
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    const env = process.env;
    // The trainer tests ask for WebGPU by these variables; doctor honours them the same way.
    const webgpu = args.values.webgpu === true || env.CLAWRL_TF_BACKEND === "webgpu" || Boolean(env.CLAWRL_WEBGPU_ROUTE);
    const json = args.values.json === true;
    const tty = process.stderr.isTTY;
    let report;
    try {
      report = await runDoctor({
        mode: args.values.deep ? "deep" : "quick",
        model: stringOpt(args, "model"),
        modelsDir: dataPaths(dataDir).models,
        webgpu,
        only,
        // A line per probe on stderr, so that stdout stays the report (--json pipes cleanly).
        log: (line) => process.stderr.write(`${tty ? "\x1b[2m" : ""}doctor: ${line}${tty ? "\x1b[0m" : ""}\n`),
      });
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const md = renderMarkdown(report);
    const out = stringOpt(args, "out");
    if (out) {
      fs.mkdirSync(out, { recursive: true });
      fs.writeFileSync(path.join(out, "report.json"), `${JSON.stringify(report, null, 2)}\n`);
      fs.writeFileSync(path.join(out, "report.md"), md);
      process.stderr.write(`doctor: wrote ${path.join(out, "report.md")} and report.json\n`);
    }
    process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : md);
    return 0;
  },
};
