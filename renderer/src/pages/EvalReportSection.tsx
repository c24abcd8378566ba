import { ApiError } from "../api/client.js";
import { useLive } from "../api/core.js";
import { LoadProblem } from "../components/Notices.js";
import { fmtTime } from "../components/format.js";

/** One row of GET /api/eval/latest's summary (electron/core/eval/latest.ts EvalSummaryRow). */
interface EvalRow {
  method: string;
  interactions: number;
  score: number;
  lo: number;
  hi: number;
  gain: number | null;
  gainLo: number | null;
  gainHi: number | null;
  significant: boolean;
  fluency: number | null;
  adapters: string[];
}
interface EvalSummary {
  scenario: string;
  createdAt: string;
  model: string;
  level: number;
  rows: EvalRow[];
}

/** Reads the summary defensively: the page must not break on an older or newer core. */
export function readEvalSummary(body: unknown): EvalSummary | null {
  const s = (body as { summary?: unknown } | null)?.summary as Partial<EvalSummary> | null | undefined;
  if (!s || typeof s !== "object" || !Array.isArray(s.rows)) return null;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  return {
    scenario: String(s.scenario ?? "eval"),
    createdAt: String(s.createdAt ?? ""),
    model: String(s.model ?? ""),
    level: num(s.level) ?? 0.95,
    rows: s.rows.map((r: Partial<EvalRow>) => ({
      method: String(r.method ?? "?"),
      interactions: num(r.interactions) ?? 0,
      score: num(r.score) ?? 0,
      lo: num(r.lo) ?? 0,
      hi: num(r.hi) ?? 0,
      gain: num(r.gain),
      gainLo: num(r.gainLo),
      gainHi: num(r.gainHi),
      significant: r.significant === true,
      fluency: num(r.fluency),
      adapters: Array.isArray(r.adapters) ? r.adapters.map(String) : [],
    })),
  };
}

const f3 = (x: number) => x.toFixed(3);

/** The Training page's "Latest eval report": scores with their interval and the gain over no learning. */
export function EvalReportSection() {
  const latest = useLive(
    (c) => c.get<unknown>("/api/eval/latest").catch((e: unknown) => (e instanceof ApiError && e.notAvailable ? null : Promise.reject(e))),
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
            {summary.scenario} · {summary.model} · {fmtTime(Date.parse(summary.createdAt) || null)} · {Math.round(summary.level * 100)}% intervals over held-out prompts
          </p>
          <table className="table">
            <thead>
              <tr>
                <th>Run</th>
                <th>Interactions</th>
                <th>Held-out score</th>
                <th>Gain over no learning</th>
                <th title="The base model's mean log-prob per token of the answers: a drop means the language suffered">Fluency (nats/token)</th>
                <th>Adapters served</th>
              </tr>
            </thead>
            <tbody>
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
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
