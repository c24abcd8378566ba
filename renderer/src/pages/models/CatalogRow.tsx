import type { CatalogModelView } from "../../../../electron/core/api/models.js";
import { fmtBytes } from "../../components/format.js";
import { DownloadButtons, DownloadProgress, downloadActive } from "./DownloadCell.js";
import { TrainVerdict } from "../../components/Trainability.js";
import type { ModelAction } from "./useModelActions.js";

/** One catalog model: what it is, its download's progress, and what can be done with it (use, download, pause, resume, cancel). */
export function CatalogRow({ m, serving, busy, onAct }: { m: CatalogModelView; serving: boolean; busy: boolean; onAct: ModelAction }) {
  const d = m.download;
  const active = downloadActive(d);
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
          <DownloadProgress d={d} name={m.name} />
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
        ) : active && d ? (
          <DownloadButtons id={m.id} d={d} onAct={onAct} />
        ) : (
          <button type="button" disabled={busy} onClick={() => void onAct(`Download ${m.name}`, "/api/models/pull", { id: m.id })}>
            {d?.state === "failed" ? "Retry" : "Download"}
          </button>
        )}
      </td>
    </tr>
  );
}
