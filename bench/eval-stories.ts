/**
 * The learning-gain claim on a real model: stories260K, the reader who loves animals
 * (eval/scenarios/stories-animals.json; --scenario for another, e.g. stories-cats.json), each
 * method against the no-learning baseline measured in the same run. Prints, per method and
 * scoring, the held-out score, its gain over the baseline with the 95% bootstrap interval over
 * prompts, whether the gain is beyond the interval, and the answers' fluency (the base model's
 * mean log-prob per token of them: a gain that breaks the language shows as a drop).
 *
 * With `--steps N` the learning loop runs N optimizer steps per cycle instead of the scenario's
 * `training.stepsPerRun` (absent there: the app's steps policy, 2 to 4 by the gate's verdicts).
 * Each run also prints its training work: the steps of every cycle, published or rejected, and
 * the tokens that went through the trainer's forward and backward, summed over them (steps ×
 * samples × tokens; the teacher's and the anchor's scoring passes run per step too, in
 * proportion), read from the checkpoints' step histories. `--train-seed K` (default 0) samples the
 * training interactions with other seeds: another course for the same scenario; `--train-seed
 * 0,1,2,3,4` runs five courses (each in DIR/course-K) and prints each point's gain per course and
 * averaged over them, the figure to compare codes by (one course is chaotic: see printCourses).
 *
 *   node --import tsx bench/eval-stories.ts [--interactions N] [--methods combined,binary,opd] [--out DIR] [--scenario FILE] [--steps N] [--train-seed K[,K...]]
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadScenario } from "../electron/core/eval/scenario.js";
import { runEval } from "../electron/core/eval/runner.js";
import { startCore } from "../electron/core/core.js";
import { formatInterval } from "../electron/core/eval/stats.js";
import { MAX_STEPS_PER_RUN, MIN_STEPS_PER_RUN } from "../electron/core/training/stepsPolicy.js";
import { EVAL_METHODS, type EvalMethod, type EvalReport } from "../electron/core/eval/report.js";

const root = path.resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: {
    interactions: { type: "string" },
    methods: { type: "string" },
    out: { type: "string" },
    seeds: { type: "string" },
    scenario: { type: "string" },
    steps: { type: "string" },
    "train-seed": { type: "string" },
  },
});
const interactions = Number(values.interactions ?? 64);
const trainSeeds = (values["train-seed"] ?? "0").split(",").map((x) => {
  const n = Number(x);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--train-seed takes whole numbers, comma-separated, not '${values["train-seed"]}'`);
  return n;
});
const methods = (values.methods ?? EVAL_METHODS.join(",")).split(",") as EvalMethod[];
for (const m of methods) if (!(EVAL_METHODS as readonly string[]).includes(m)) throw new Error(`unknown method '${m}'`);
const model = path.join(root, "models", "test", "stories260K.gguf");
const scenarioFile = path.resolve(values.scenario ?? path.join(root, "eval", "scenarios", "stories-animals.json"));
const out = path.resolve(values.out ?? path.join(root, ".cache", "bench", `eval-${path.basename(scenarioFile, ".json")}`));

const scenario = loadScenario(scenarioFile);
if (values.steps !== undefined) {
  const steps = Number(values.steps);
  if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps must be a whole number of at least 1, not '${values.steps}'`);
  scenario.training.stepsPerRun = steps;
}

const stepsLabel =
  scenario.training.stepsPerRun !== undefined ? `${scenario.training.stepsPerRun} steps` : `${MIN_STEPS_PER_RUN}–${MAX_STEPS_PER_RUN} steps (the steps policy)`;

/**
 * The training work of every cycle, published or rejected: each checkpoint's run took the steps
 * its optimizer counted beyond its parent's (state.json's checkpoints), and its metrics' step
 * history ends with them (trainer/worker.ts keeps the last 200 steps: a longer history misses
 * the oldest, counted in `missing`).
 */
function trainingWork(dataDir: string | null): { steps: number; tokens: number; runs: number; missing: number } | null {
  const root = dataDir && fs.existsSync(path.join(dataDir, "state.json")) ? dataDir : null;
  if (!root) return null;
  const state = JSON.parse(fs.readFileSync(path.join(root, "state.json"), "utf8")) as {
    checkpoints: Array<{ id: number; parent: number | null; totalSteps?: number }>;
  };
  const totalOf = new Map(state.checkpoints.map((c) => [c.id, c.totalSteps ?? 0]));
  let steps = 0;
  let tokens = 0;
  let missing = 0;
  for (const c of state.checkpoints) {
    const f = path.join(root, "checkpoints", String(c.id), "metrics.json");
    if (!fs.existsSync(f)) continue;
    const m = JSON.parse(fs.readFileSync(f, "utf8")) as { totalSteps?: number; steps?: Array<{ tokens: number }> };
    const took = (m.totalSteps ?? 0) - (c.parent === null ? 0 : (totalOf.get(c.parent) ?? 0));
    const own = (m.steps ?? []).slice(-took);
    steps += took;
    missing += took - own.length;
    tokens += own.reduce((a, x) => a + x.tokens, 0);
  }
  return { steps, tokens, runs: state.checkpoints.length, missing };
}

/** One course's report, as this bench has always printed it. */
function printReport(report: EvalReport): void {
  const base = report.runs[0].points[0].score;
  console.log(
    `\n${report.scenario.name}: ${report.heldOutPrompts} held-out prompts × ${report.samplesPerPrompt} samples × ${report.seeds.length} seeds, ${interactions} interactions, ${stepsLabel} per cycle`,
  );
  const baseFl = report.runs[0].points[0].fluency;
  console.log(
    `baseline (no learning)  score ${formatInterval(base)}${baseFl ? `  fluency ${baseFl.meanLogprob.toFixed(3)} nats/token (base model's log-prob of the answers; "fl" below)` : ""}`,
  );
  for (const r of report.runs.slice(1)) {
    const last = r.points[r.points.length - 1];
    const g = r.gain!;
    const trail = r.points
      .map(
        (p) =>
          `${p.interactions}: ${p.score.mean.toFixed(3)}${p.gain ? ` (${formatInterval(p.gain, true)})` : ""}${p.fluency ? ` fl ${p.fluency.meanLogprob.toFixed(2)}` : ""} ${p.adapters.join("/")}`,
      )
      .join("; ");
    console.log(`${r.method.padEnd(9)} per point: ${trail}`);
    console.log(
      `${"".padEnd(9)} first gain beyond the CI at ${r.firstGainBeyondCi ?? "none"} interactions; best gain ${r.bestGain ? `${formatInterval(r.bestGain)} at ${r.bestGain.interactions}` : "-"}`,
    );
    const ratio = base.mean > 0 ? `${(last.score.mean / base.mean).toFixed(2)}x baseline` : "baseline 0";
    console.log(
      `${r.method.padEnd(9)} score ${formatInterval(last.score)} (${ratio})  gain ${formatInterval(g, true)} ${g.significant && g.lo > 0 ? "beyond the CI" : "NOT beyond the CI"}  checkpoints ${r.checkpoints.map((c) => `${c.n}:${c.verdict[0]}`).join(" ") || "-"}  ${r.seconds.toFixed(0)} s`,
    );
    const w = trainingWork(r.dataDir);
    if (w)
      console.log(
        `${"".padEnd(9)} training work: ${w.steps} steps in ${w.runs} cycles, ${w.tokens} tokens through forward and backward (${(w.tokens / Math.max(1, w.steps - w.missing)).toFixed(0)} a step)${w.missing > 0 ? `; ${w.missing} steps' tokens not in the histories` : ""}`,
      );
  }
}

/**
 * Several courses: each method's gain at each point, per course and averaged. One course is a
 * chain of sampled answers, so a change that only rounds differently (a native kernel) can send
 * it elsewhere. Five courses of one code (53fe396) gained 0.104-0.444 at 64 interactions, and
 * their mean (0.237) equalled the next code's (0.240, whose one seed-0 course had looked like a
 * regression: issue 31).
 */
function printCourses(reports: Array<{ seed: number; report: EvalReport }>): void {
  console.log(`\ngain over the baseline by course (train seeds ${reports.map((r) => r.seed).join(", ")}):`);
  for (const [m, run] of reports[0].report.runs.entries()) {
    if (m === 0) continue;
    for (const [j, p] of run.points.entries()) {
      if (!p.gain || p.interactions === 0) continue;
      const gains = reports.map((r) => r.report.runs[m].points[j].gain!.mean);
      const mean = gains.reduce((a, x) => a + x, 0) / gains.length;
      console.log(
        `${run.method.padEnd(9)} ${String(p.interactions).padStart(3)}: mean ${mean >= 0 ? "+" : ""}${mean.toFixed(3)}  min ${Math.min(...gains).toFixed(3)}  max ${Math.max(...gains).toFixed(3)}  (${gains.map((x) => x.toFixed(3)).join(" ")})`,
      );
    }
  }
}

const t0 = performance.now();
const reports: Array<{ seed: number; report: EvalReport }> = [];
for (const seed of trainSeeds) {
  const report = await runEval({
    scenario,
    scenarioFile,
    model,
    methods,
    interactions,
    seedCount: values.seeds ? Number(values.seeds) : undefined,
    trainSeed: seed,
    outDir: trainSeeds.length > 1 ? path.join(out, `course-${seed}`) : out,
    engine: { threads: Number(process.env.CLAWRL_THREADS) || undefined },
    log: (l) => console.log(`  ${l}`),
    startCore,
  });
  printReport(report);
  reports.push({ seed, report });
}
if (reports.length > 1) printCourses(reports);
console.log(
  `total ${((performance.now() - t0) / 1000).toFixed(0)} s; report${reports.length > 1 ? "s under" : ""} ${reports.length > 1 ? out : path.join(out, "report.json")}`,
);
