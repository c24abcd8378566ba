import { ApiError } from "../api/client.js";
import { useLive } from "../api/core.js";
import { LoadProblem } from "../components/Notices.js";
import { fmtTime } from "../components/format.js";
import type { EvalLatestReply, EvalSummary } from "../../../electron/core/api/eval.js";
import { DataTable } from "../components/DataTable.js";

/** GET /api/eval/latest's summary (the contract's EvalSummary), or null before any eval ran. */
export function readEvalSummary(body: unknown): EvalSummary | null {
  // The core builds the summary (eval/latest.ts summarize), whatever the report's age.
  return (body as Partial<EvalLatestReply> | null)?.summary ?? null;
}

const f3 = (x: number) => x.toFixed(3);

/** The Training page's "Latest eval report": scores with their interval and the gain over no learning. */
export function EvalReportSection() {
  const latest = useLive(
    (c) => c.getJson("/api/eval/latest").catch((e: unknown) => (e instanceof ApiError && e.notAvailable ? null : Promise.reject(e))),
    [],
    [],
    30_000,
  );
  const summary = latest.data ? readEvalSummary(latest.data) : null;
  return (
    <section aria-label="Latest eval report">
      <h2>Latest eval report</h2>
      {latest.error && <LoadProblem error={latest.error} what="Eval report" onRetry={latest.reload} />}
      {!summary ? (
        <p className="muted">
          No eval report yet. Run <code>clawrl eval --scenario FILE --model M --out DIR</code> to measure whether learning helps.
        </p>
      ) : (
        <>
          <p className="muted">
            {summary.scenario} · {summary.model} · {fmtTime(Date.parse(summary.createdAt) || null)} · {Math.round(summary.level * 100)}% intervals over held-out
            prompts
          </p>
          <DataTable
            columns={[
              "Run",
              "Interactions",
              "Held-out score",
              "Gain over no learning",
              { label: "Fluency (nats/token)", title: "The base model's mean log-prob per token of the answers: a drop means the language suffered" },
              "Adapters served",
            ]}
          >
            {summary.rows.map((r) => (
              <tr key={r.method}>
                <td>{r.method}</td>
                <td>{r.interactions}</td>
                <td className="nowrap">
                  {f3(r.score)} [{f3(r.lo)}, {f3(r.hi)}]
                </td>
                <td className="nowrap">
                  {r.gain === null ? "—" : `${r.gain >= 0 ? "+" : ""}${f3(r.gain)} [${f3(r.gainLo ?? 0)}, ${f3(r.gainHi ?? 0)}]${r.significant ? " ✓" : ""}`}
                </td>
                <td className="nowrap">{r.fluency === null ? "—" : r.fluency.toFixed(2)}</td>
                <td className="clip">{r.adapters.join(", ") || "—"}</td>
              </tr>
            ))}
          </DataTable>
        </>
      )}
    </section>
  );
}
