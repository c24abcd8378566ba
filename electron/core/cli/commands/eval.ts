import fs from "node:fs";
import path from "node:path";
import { EVAL_METHODS, type EvalMethod } from "../../eval/report.js";
import { CliError, UsageError, intOpt, requiredString, stringOpt, type CommandSpec } from "../command.js";

export const evalCommand: CommandSpec = {
  name: "eval",
  usage:
    "--scenario FILE --model M --out DIR [--method combined|binary|opd|all] [--interactions N] [--seeds K] [--url URL --token T] [--threads N] [--data-dir DIR]",
  summary:
    "Run a personalization scenario through the real server and learning loop: a no-learning baseline and each method, held-out scores " +
    "before/after (and every batch) with a 95% bootstrap CI over prompts. Writes DIR/report.json, DIR/chart.svg, and per method the data dir (JSONL log), samples.jsonl and replay/ (clawrl train commands).",
  options: {
    scenario: { type: "string", value: "FILE", description: "scenario JSON (see eval/scenarios/)" },
    model: { type: "string", value: "M", description: "GGUF model to serve (in-process), or a label with --url" },
    out: { type: "string", value: "DIR", description: "output directory" },
    method: { type: "string", value: "NAME", description: "combined (default), binary, opd, or all; may be repeated", multiple: true },
    interactions: { type: "string", value: "N", description: "training interactions per method (default: 2 × training prompts)" },
    seeds: { type: "string", value: "K", description: "how many seeds to sample held-out answers with (default: the scenario's)" },
    url: { type: "string", value: "URL", description: "run against a running core instead of starting one (one method; its first scoring is the baseline)" },
    token: { type: "string", value: "T", description: "the core's API token (with --url)" },
    threads: { type: "string", value: "N", description: "CPU threads for inference (in-process)" },
    "data-dir": {
      type: "string",
      value: "DIR",
      description: "the app's data dir, where the report is published for the Training page (default: the app's; runs never touch its models or logs)",
    },
  },
  async run(args) {
    const scenarioFile = requiredString(args, "scenario");
    const model = requiredString(args, "model");
    const outDir = requiredString(args, "out");
    const raw = (args.values.method as string[] | undefined) ?? ["combined"];
    const methods = [...new Set(raw.flatMap((m) => (m === "all" ? [...EVAL_METHODS] : [m])))];
    for (const m of methods)
      if (!(EVAL_METHODS as readonly string[]).includes(m)) throw new UsageError(`--method must be one of ${EVAL_METHODS.join(", ")} or all, got '${m}'`);
    const seeds = intOpt(args, "seeds", 1, 64);
    const threads = intOpt(args, "threads", 1, 256);
    const url = stringOpt(args, "url");
    const token = stringOpt(args, "token");
    if (url && !token) throw new UsageError("--url needs --token");
    if (url && methods.length > 1) throw new UsageError("--url runs one method (the server's state carries over between runs)");
    if (!url && !fs.existsSync(model)) throw new CliError(`--model ${model}: no such file`);
    // Loaded here: `clawrl eval --help` should not pay for zod schemas or the core.
    const { loadScenario } = await import("../../eval/scenario.js");
    const scenario = loadScenario(scenarioFile);
    const interactions = intOpt(args, "interactions", 1, 100_000) ?? 2 * scenario.trainPrompts.length;
    const { runEval } = await import("../../eval/runner.js");
    const report = await runEval({
      scenario,
      scenarioFile,
      model,
      methods: methods as EvalMethod[],
      interactions,
      seedCount: seeds,
      outDir,
      url,
      token,
      engine: { threads },
      log: (l) => console.log(l),
      // Loaded only for an in-process run, as before.
      startCore: async (opts) => (await import("../../core.js")).startCore(opts),
    });
    const { publishLatest } = await import("../../eval/latest.js");
    const { formatInterval } = await import("../../eval/stats.js");
    const { defaultDataDir } = await import("../../config/paths.js");
    const published = publishLatest(stringOpt(args, "data-dir") ?? defaultDataDir(), report, outDir);
    for (const r of report.runs) {
      const last = r.points[r.points.length - 1];
      const g = r.gain
        ? `  gain ${formatInterval(r.gain, true)}${r.gain.significant ? " (beyond the CI)" : ""}${r.firstGainBeyondCi !== null ? `; first beyond the CI at ${r.firstGainBeyondCi}` : ""}`
        : "";
      console.log(
        `${r.method.padEnd(9)} score ${formatInterval(last.score)} after ${last.interactions} interactions${g}${last.fluency ? `  fluency ${last.fluency.meanLogprob.toFixed(3)} nats/token` : ""}  adapters ${r.adaptersServed.map((a) => a.version).join(", ") || "-"}`,
      );
    }
    console.log(
      `wrote ${path.join(outDir, "report.json")} and ${path.join(outDir, report.chart)} (${report.timings.totalSeconds.toFixed(0)} s); latest report for the app: ${published}`,
    );
  },
};
