import fs from "node:fs";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import type { EvalReport } from "./report.js";
import type { EvalLatestReply, EvalSummary } from "../api/eval.js";

/** Where the app keeps the latest eval report: <data dir>/eval/latest.json (+ latest.svg, the chart). */
export function latestPaths(dataDir: string) {
  const dir = path.join(dataDir, "eval");
  return { dir, report: path.join(dir, "latest.json"), chart: path.join(dir, "latest.svg") };
}

/** Copies a finished report (and its chart) into the app's data dir, for the Training page. */
export function publishLatest(dataDir: string, report: EvalReport, reportDir: string): string {
  const p = latestPaths(dataDir);
  fs.mkdirSync(p.dir, { recursive: true });
  const chart = path.join(reportDir, report.chart);
  if (fs.existsSync(chart)) writeFileAtomicSync(p.chart, fs.readFileSync(chart), 0o644);
  writeFileAtomicSync(p.report, `${JSON.stringify({ ...report, reportDir: path.resolve(reportDir) }, null, 2)}\n`, 0o644);
  return p.report;
}

/** The latest report, or null when there is none; a damaged file is an error naming it. */
export function readLatest(dataDir: string): (EvalReport & { reportDir?: string }) | null {
  const p = latestPaths(dataDir).report;
  if (!fs.existsSync(p)) return null;
  try {
    return JSON.parse(fs.readFileSync(p, "utf8")) as EvalReport & { reportDir?: string };
  } catch (e) {
    throw new Error(`${p}: not valid JSON: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * GET /api/eval/latest → {report: EvalReport | null, summary} (summary: per run the last score,
 * its CI and the gain over the baseline, for the Training page); GET /api/eval/latest/chart.svg.
 */
export function registerEvalRoutes(app: FastifyInstance, dataDir: string): void {
  app.get("/api/eval/latest", async (): Promise<EvalLatestReply<EvalReport>> => {
    const report = readLatest(dataDir);
    return { report, summary: report ? summarize(report) : null };
  });
  app.get("/api/eval/latest/chart.svg", async (_req, reply) => {
    const p = latestPaths(dataDir).chart;
    if (!fs.existsSync(p))
      return reply
        .status(404)
        .send({ error: { message: "no eval chart yet (run `clawrl eval`)", type: "invalid_request_error", param: null, code: "not_found" } });
    return reply.type("image/svg+xml").send(fs.readFileSync(p));
  });
}

export function summarize(r: EvalReport): EvalSummary {
  return {
    scenario: r.scenario.name,
    createdAt: r.createdAt,
    model: path.basename(r.model),
    level: r.ci.level,
    rows: r.runs.map((run) => {
      const last = run.points[run.points.length - 1];
      return {
        method: run.method,
        interactions: last?.interactions ?? 0,
        score: last?.score.mean ?? 0,
        lo: last?.score.lo ?? 0,
        hi: last?.score.hi ?? 0,
        gain: run.gain?.mean ?? null,
        gainLo: run.gain?.lo ?? null,
        gainHi: run.gain?.hi ?? null,
        significant: run.gain?.significant ?? false,
        fluency: last?.fluency?.meanLogprob ?? null,
        adapters: [...new Set([...run.adaptersServed.map((a) => a.version), ...(last?.adapters ?? [])])],
      };
    }),
  };
}
