import { useEffect, useState } from "react";
import { ApiError, messageOf } from "../../api/client.js";
import { useCore, useLive } from "../../api/core.js";
import type { DoctorReport, DoctorStatus } from "../../../../electron/core/api/doctor.js";
import { DataTable } from "../../components/DataTable.js";
import { ErrorNote, LoadProblem } from "../../components/Notices.js";
import "./machineCheck.css";

type Status = DoctorReport["inference"]["rows"][number]["status"];

/** How often GET /api/doctor is read while a check runs (the `doctor` event may not arrive: no SSE, a proxy). */
const POLL_MS = 3000;

const fmt = (x: number | null | undefined) => (x === null || x === undefined ? "—" : x >= 100 ? x.toFixed(0) : x.toFixed(1));
const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;

function StatusTag({ status, reason }: { status: Status; reason: string | null }) {
  const cls = status === "ok" ? "tag-ok" : status === "failed" ? "tag-bad" : status === "unavailable" ? "tag-warn" : "";
  return (
    <>
      <span className={`tag ${cls}`}>{status === "ok" ? "works" : status}</span>
      {status !== "ok" && reason && <div className="muted small machine-reason">{reason}</div>}
    </>
  );
}

/** The report, readable: what it means first, then the machine, then a table per section. */
function Report({ report }: { report: DoctorReport }) {
  const m = report.machine;
  const t = report.training.train;
  return (
    <div className="machine-report">
      <h3>What it means</h3>
      <ul className="machine-verdict">
        {report.meaning.lines.map((l) => (
          <li key={l}>{l}</li>
        ))}
      </ul>
      <p className="muted small">
        {m.cpuModel}, {m.cores} cores · {gib(m.ramFreeBytes)} of {gib(m.ramTotalBytes)} RAM free · {m.os} · checked{" "}
        {new Date(report.createdAt).toLocaleString()} in {report.wallSeconds.toFixed(0)} s
        {m.loadAverage > m.cores ? " · the machine was busy, so the figures read low" : ""}
      </p>

      <h3>Running models</h3>
      <p className="small">
        The app serves on <strong>{report.inference.pick.backend ?? "no backend"}</strong>: {report.inference.pick.why}
      </p>
      <DataTable
        columns={[
          "Backend",
          "Status",
          "Model",
          { label: "Prompt tok/s", title: "Prompt tokens read per second" },
          { label: "Decode tok/s", title: "Tokens written per second" },
          "Layers on GPU",
        ]}
      >
        {report.inference.rows.flatMap((row) =>
          row.runs.length === 0
            ? [
                <tr key={row.backend}>
                  <td>{row.backend}</td>
                  <td>
                    <StatusTag status={row.status} reason={row.reason} />
                  </td>
                  <td colSpan={4} className="muted">
                    —
                  </td>
                </tr>,
              ]
            : row.runs.map((x) => (
                <tr key={`${row.backend}/${x.model}`}>
                  <td>{row.backend}</td>
                  <td>
                    <StatusTag status={row.status} reason={row.reason} />
                  </td>
                  <td>{x.model}</td>
                  <td>{fmt(x.promptTokensPerSecond)}</td>
                  <td>{fmt(x.decodeTokensPerSecond)}</td>
                  <td>
                    {x.gpuLayers}/{x.totalLayers ?? "?"}
                  </td>
                </tr>
              )),
        )}
      </DataTable>

      <h3>Learning</h3>
      <DataTable columns={["Backend", "Status", "Device", { label: "Peak GFLOP/s", title: "Fastest matrix multiply measured" }]}>
        {report.training.rows.map((row) => (
          <tr key={row.backend}>
            <td>
              {row.backend}
              {row.backend === report.training.best && <span className="tag tag-active">best</span>}
            </td>
            <td>
              <StatusTag status={row.status} reason={row.reason} />
            </td>
            <td>{row.device ?? "—"}</td>
            <td>{fmt(row.peakGflops)}</td>
          </tr>
        ))}
      </DataTable>
      <p className="small">
        {t
          ? `Learning on ${t.backend}: ${fmt(t.trainedTokensPerSecond)} trained tokens/s on the ${t.shape} shape (${t.stepSeconds.toFixed(1)} s a step${t.firstStepOnly ? ", the first step: reads low" : ""}).`
          : `No learning run: ${report.training.trainReason ?? "—"}.`}
        {report.training.plan &&
          ` ${report.training.plan.model}: ${report.training.plan.fits ? "fits" : "does not fit"} for learning (${report.training.plan.summary}).`}
      </p>
    </div>
  );
}

/**
 * Settings → "This machine": runs `clawrl doctor --quick` in the core (POST /api/doctor/run),
 * shows its progress lines as they come (the `doctor` event; GET /api/doctor is polled too),
 * then the report, with its Markdown to copy into a bug report.
 */
export function MachineCheck() {
  const { client } = useCore();
  const live = useLive((c) => c.get<DoctorStatus>("/api/doctor"), ["doctor"], [], POLL_MS);
  const [starting, setStarting] = useState(false);
  const [startError, setStartError] = useState<string | null>(null);
  const [copied, setCopied] = useState<"yes" | "failed" | null>(null);
  const s = live.data;
  const running = s?.running === true;
  const { reload } = live;

  // The fallback: read the status every few seconds while a check runs, events or not.
  useEffect(() => {
    if (!running) return;
    const id = setInterval(reload, POLL_MS);
    return () => clearInterval(id);
  }, [running, reload]);

  const run = async () => {
    setStarting(true);
    setStartError(null);
    try {
      await client.post<DoctorStatus>("/api/doctor/run");
    } catch (e) {
      // 409: one is running already (another window started it): show that one.
      if (!(e instanceof ApiError && e.status === 409)) setStartError(messageOf(e));
    } finally {
      setStarting(false);
      reload();
    }
  };

  const copy = () => {
    if (!s?.markdown) return;
    void navigator.clipboard?.writeText(s.markdown).then(
      () => setCopied("yes"),
      () => setCopied("failed"),
    );
    setTimeout(() => setCopied(null), 2000);
  };

  return (
    <section className="machine-check" aria-labelledby="machine-check-title">
      <h2 id="machine-check-title">This machine</h2>
      <p className="muted small">
        Measures what this computer can do: which backends run models and learn here, and how fast. It takes about 3 minutes; the app keeps working meanwhile.
      </p>
      <div className="actions">
        <button type="button" className="primary" onClick={() => void run()} disabled={running || starting}>
          {running ? "Checking…" : s?.report ? "Check again" : "Check this machine"}
        </button>
        {s?.markdown && !running && (
          <button type="button" onClick={copy} aria-label="Copy report as Markdown">
            {copied === "yes" ? "Copied" : copied === "failed" ? "Copy failed" : "Copy report"}
          </button>
        )}
      </div>
      {live.error && !s && <LoadProblem error={live.error} what="Machine check" onRetry={reload} />}
      {startError && <ErrorNote error={startError} />}
      <div className="machine-progress" role="status" aria-live="polite" aria-label="Machine check progress">
        {running && (
          <>
            <p className="small">Checking this machine{s.progress.length ? ":" : "…"}</p>
            {s.progress.length > 0 && <pre className="machine-log">{s.progress.join("\n")}</pre>}
          </>
        )}
        {!running &&
          s?.finishedAt &&
          (s.error ? <ErrorNote error={`The check did not finish: ${s.error}`} /> : <span className="sr-only">Check finished.</span>)}
      </div>
      {s?.report && <Report report={s.report} />}
    </section>
  );
}
