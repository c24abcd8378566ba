import fs from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import { renderChart, type ChartSeries } from "./chart.js";
import type { Interval } from "./stats.js";

export const EVAL_METHODS = ["combined", "binary", "opd"] as const;
export type EvalMethod = (typeof EVAL_METHODS)[number];

/** One scoring of the held-out prompts. */
export interface EvalPoint {
  /** training interactions before this scoring */
  interactions: number;
  score: Interval;
  /** mean score per held-out prompt (over samples × seeds), in the scenario's order */
  promptMeans: number[];
  /** adapter versions that answered the held-out prompts at this point */
  adapters: string[];
  /** score − baseline on the same prompts (paired bootstrap), null for the baseline itself */
  gain?: (Interval & { significant: boolean }) | null;
  /**
   * How natural the answers still read: their mean log-prob per token under the base model
   * (no adapter), given the prompt. A gain bought by breaking the language shows up as a drop
   * here. null when there is no base model to ask (--url mode, chat scenarios).
   */
  fluency?: { meanLogprob: number; tokens: number } | null;
  /** a few of the answers scored at this point (the first sample of each held-out prompt, first seed) */
  examples?: Array<{ prompt: string; text: string; score: number }>;
  seconds: number;
}

export interface MethodRun {
  method: EvalMethod | "baseline";
  points: EvalPoint[];
  /** final score − baseline, paired over prompts; `significant` when the interval excludes 0 */
  gain: (Interval & { significant: boolean }) | null;
  /** the first scoring whose gain over the baseline is above its interval (lo > 0), or null */
  firstGainBeyondCi: number | null;
  /** the scoring with the highest mean gain */
  bestGain: { interactions: number; mean: number; lo: number; hi: number } | null;
  /** adapter versions that answered the training prompts, with the interaction each first served */
  adaptersServed: Array<{ version: string; firstInteraction: number; answers: number }>;
  checkpoints: Array<{
    n: number;
    version: string;
    parent: number | null;
    verdict: string;
    samples: number;
    kl: number | null;
    loss: number | null;
    reasons: string[];
  }>;
  finalAdapter: string | null;
  reactions: { up: number; down: number; hint: number; next: number; none: number };
  /** the run's trajectories log (JSONL), its data dir, the exported samples and replay commands */
  logPath: string | null;
  dataDir: string | null;
  samplesPath: string | null;
  replay: string[];
  notes: string[];
  seconds: number;
  /**
   * Scenarios with preferences: the training turn right after each hint, scored as served (the
   * preference block in its prompt) and as the same adapter answers the same prompt and seed
   * without it (a side turn); `gain` = with − without, paired per turn.
   */
  afterHint?: { turns: number; withBlock: Interval; without: Interval; gain: Interval & { significant: boolean } } | null;
}

export interface EvalReport {
  version: 1;
  scenario: { name: string; file: string };
  model: string;
  mode: "in-process" | "url";
  createdAt: string;
  interactions: number;
  evalEvery: number;
  seeds: number[];
  samplesPerPrompt: number;
  heldOutPrompts: number;
  ci: { method: "bootstrap-prompts"; level: number; resamples: number; unit: string };
  runs: MethodRun[];
  timings: { totalSeconds: number };
  chart: string;
}

export function chartSeries(report: EvalReport): ChartSeries[] {
  return report.runs.map((r) => ({
    name: r.method === "baseline" ? "baseline (no learning)" : r.method,
    dashed: r.method === "baseline",
    points: r.points.map((p) => ({ x: p.interactions, mean: p.score.mean, lo: p.score.lo, hi: p.score.hi })),
  }));
}

/** Writes DIR/report.json and DIR/chart.svg (each to a temp name, fsynced, renamed). */
export function writeReport(dir: string, report: EvalReport): { reportPath: string; chartPath: string } {
  fs.mkdirSync(dir, { recursive: true });
  const chartPath = path.join(dir, report.chart);
  writeFileAtomicSync(
    chartPath,
    renderChart(chartSeries(report), { title: `${report.scenario.name}: held-out score vs interactions (${Math.round(report.ci.level * 100)}% CI)` }),
    0o644,
  );
  const reportPath = path.join(dir, "report.json");
  writeFileAtomicSync(reportPath, `${JSON.stringify(report, null, 2)}\n`, 0o644);
  return { reportPath, chartPath };
}
