import type { CatalogModelView } from "../../../../electron/core/api/models.js";
import { fmtBytes, fmtDuration } from "../../components/format.js";
import { TrainVerdict } from "../../components/Trainability.js";
import type { ModelAction } from "./useModelActions.js";

/** One catalog model: what it is, its download's progress, and what can be done with it (use, download, pause, resume, cancel). */
export function CatalogRow({ m, serving, busy, onAct }: { m: CatalogModelView; serving: boolean; busy: boolean; onAct: ModelAction }) {
  const id = encodeURIComponent(m.id);
  const d = m.download;
  const active = d && /download|running|paused|queued/i.test(d.state);
  return (
    <tr>
      <td>
        <strong>{m.name}</strong>
        {m.recommended && <span className="tag tag-active">recommended</span>}
        <div className="small muted">
          {[m.quantization, m.license, m.serveMemoryBytes ? `serves in ${fmtBytes(m.serveMemoryBytes)}` : null].filter(Boolean).join(" · ")}
        </div>
        {m.notes && <div className="small muted">{m.notes}</div>}
        <TrainVerdict t={m.training} />
      </td>
      <td className="nowrap">{fmtBytes(m.sizeBytes)}</td>
      <td>{m.architecture}</td>
      <td className="download-cell">
        {m.installed && !active ? (
          <span className="tag tag-ok">installed</span>
        ) : d ? (
          <>
            {/* A download that failed before a byte arrived has no bar to show: its error says why. */}
            {!(d.state === "failed" && d.bytes === 0) && <progress aria-label={`Download of ${m.name}`} max={d.total ?? undefined} value={d.bytes} />}
            <div className="small muted">
              {/* Speed and time left only while bytes are arriving (a paused download has neither). */}
              {[
                `${fmtBytes(d.bytes)}${d.total ? ` of ${fmtBytes(d.total)}` : ""}`,
                d.speed ? `${fmtBytes(d.speed)}/s` : null,
                d.etaSeconds !== null && /download/i.test(d.state) ? `${fmtDuration(d.etaSeconds)} left` : null,
                d.state,
              ]
                .filter(Boolean)
                .join(" · ")}
            </div>
            {d.error && <div className="small error-text">{d.error}</div>}
          </>
        ) : (
          <span className="muted">—</span>
        )}
      </td>
      <td className="nowrap row-actions">
        {serving ? (
          <span className="tag tag-active">active</span>
        ) : m.installed ? (
          <button type="button" disabled={busy} onClick={() => void onAct(`Use ${m.name}`, "/api/models/use", { id: m.id })}>
            Use
          </button>
        ) : active ? (
          <>
            {/paused/i.test(d.state) ? (
              <button type="button" onClick={() => void onAct("Resume", `/api/models/${id}/resume`)}>
                Resume
              </button>
            ) : (
              <button type="button" onClick={() => void onAct("Pause", `/api/models/${id}/pause`)}>
                Pause
              </button>
            )}
            <button type="button" onClick={() => void onAct("Cancel", `/api/models/${id}/cancel`)}>
              Cancel
            </button>
          </>
        ) : (
          <button type="button" disabled={busy} onClick={() => void onAct(`Download ${m.name}`, "/api/models/pull", { id: m.id })}>
            {d?.state === "failed" ? "Retry" : "Download"}
          </button>
        )}
      </td>
    </tr>
  );
}
