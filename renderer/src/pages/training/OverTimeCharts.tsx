import type { MetricPoint } from "../../format/metrics.js";
import { LineChart, VerdictStrip } from "../../components/Charts.js";
import { termTitle, terms } from "../../components/terms.js";

/** The gate's drift budget (the newest candidate's), drawn as the chart's limit. */
function driftLimit(series: MetricPoint[]): { value: number; label: string } | null {
  const b = [...series].reverse().find((p) => p.driftBudget !== null)?.driftBudget ?? null;
  return b === null ? null : { value: b, label: terms.driftBudget.label };
}

/** The "Over time" charts, one point per new version; a sentence while there are none. */
export function OverTimeCharts({ series }: { series: MetricPoint[] }) {
  if (series.length === 0) {
    return (
      <p className="muted">
        No lessons yet. After the first one, charts show how well answers were rated, the training error, how much each lesson changed the answers, how far the
        assistant moved from the original model, and each safety check's verdict: one point per new version.
      </p>
    );
  }
  return (
    <div className="charts">
      <LineChart title={termTitle(terms.meanReward)} values={series.map((p) => p.meanReward)} color="var(--c-green)" />
      <LineChart title={termTitle(terms.loss)} values={series.map((p) => p.loss)} color="var(--c-blue)" />
      <LineChart title={termTitle(terms.klServing)} values={series.map((p) => p.kl)} color="var(--c-orange)" />
      <LineChart
        title={termTitle(terms.drift)}
        label="recent prompts"
        values={series.map((p) => p.klToBase)}
        color="var(--c-blue)"
        extra={
          series.some((p) => p.klToBaseHeldBack !== null)
            ? { label: terms.heldBackTurns.label, values: series.map((p) => p.klToBaseHeldBack), color: "var(--c-orange)" }
            : undefined
        }
        limit={driftLimit(series)}
      />
      <VerdictStrip verdicts={series.map((p) => p.verdict)} />
    </div>
  );
}
