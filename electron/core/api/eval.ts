/** GET /api/eval/latest: the latest `clawrl eval` report with a per-run summary (eval/latest.ts). */

/** One method's row of the summary: its last scoring, with its gain over the baseline. */
export interface EvalSummaryRow {
  method: string;
  interactions: number;
  score: number;
  lo: number;
  hi: number;
  gain: number | null;
  gainLo: number | null;
  gainHi: number | null;
  significant: boolean;
  /** base model's mean log-prob per token of the last scoring's answers (null: not measured) */
  fluency: number | null;
  adapters: string[];
}

export interface EvalSummary {
  scenario: string;
  createdAt: string;
  model: string;
  /** the confidence level of the intervals */
  level: number;
  rows: EvalSummaryRow[];
}

export interface EvalLatestReply<Report = unknown> {
  /** the full report (eval/report.ts EvalReport); null before any eval ran */
  report: Report | null;
  summary: EvalSummary | null;
}
