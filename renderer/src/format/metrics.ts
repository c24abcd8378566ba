// The Training page's charts: GET /api/training's history, else the checkpoints in time order.
import type { CheckpointView, TrainingHistoryPoint } from "../../../electron/core/api/training.js";

/** What a chart point draws of a candidate (the history's own fields). */
export type MetricPoint = Pick<TrainingHistoryPoint, "meanReward" | "loss" | "kl" | "klToBase" | "klToBaseHeldBack" | "driftBudget" | "verdict">;

/** Points for the charts: the history when the core keeps one, else the checkpoints (published or rejected candidates) by number. */
export function metricSeries(checkpoints: CheckpointView[], history: TrainingHistoryPoint[] | null | undefined): MetricPoint[] {
  if (history?.length) return history;
  return [...checkpoints]
    .sort((a, b) => a.n - b.n)
    .map((c) => ({
      meanReward: c.meanReward,
      loss: c.loss,
      kl: c.kl,
      klToBase: c.klToBase?.recent ?? null,
      klToBaseHeldBack: null,
      driftBudget: null,
      verdict: c.verdict,
    }));
}
