import { useState } from "react";
import type { EmbeddingCatalogModelView, InstalledModelView } from "../../../../electron/core/api/models.js";
import { DataTable } from "../../components/DataTable.js";
import { fmtBytes } from "../../components/format.js";
import { modelName } from "../../format/models.js";
import { DownloadButtons, DownloadProgress, downloadActive } from "./DownloadCell.js";
import { DeleteButton, DeleteDialog } from "./InstalledModels.js";
import type { ModelAction } from "./useModelActions.js";

/** "Embedding models": the catalog's models for /v1/embeddings (never chat, never trained), and installed ones, with download and delete. */
export function EmbeddingModels({
  catalog,
  installed,
  busy,
  onAct,
}: {
  catalog: EmbeddingCatalogModelView[];
  installed: InstalledModelView[];
  busy: boolean;
  onAct: ModelAction;
}) {
  const [deleting, setDeleting] = useState<InstalledModelView | null>(null);
  const others = installed.filter((m) => !catalog.some((c) => c.id === m.id));
  if (catalog.length === 0 && installed.length === 0) return null;
  return (
    <section aria-labelledby="embedding-models-title">
      <h2 id="embedding-models-title">Embedding models</h2>
      <p className="muted">
        For search and memory tools that ask for vectors (/v1/embeddings). They are not chat models: the chat's model picker does not list them.
      </p>
      <DataTable columns={["Model", "Size", "Vectors", "Download"]} actions>
        {catalog.map((e) => {
          const d = e.download;
          const active = downloadActive(d);
          const model = installed.find((m) => m.id === e.id) ?? null;
          return (
            <tr key={e.id}>
              <td>
                <strong>{e.name}</strong>
                <div className="small muted">{[e.quantization, e.license].filter(Boolean).join(" · ")}</div>
                {e.notes && <div className="small muted">{e.notes}</div>}
              </td>
              <td className="nowrap">{fmtBytes(e.sizeBytes)}</td>
              <td>{e.dimensions} numbers</td>
              <td className="download-cell">
                {e.installed && !active ? <span className="tag tag-ok">installed</span> : d ? <DownloadProgress d={d} name={e.name} /> : null}
              </td>
              <td className="nowrap row-actions">
                {model && !active ? (
                  <DeleteButton m={model} serving={false} busy={busy} onAsk={setDeleting} />
                ) : active && d ? (
                  <DownloadButtons id={e.id} d={d} onAct={onAct} />
                ) : (
                  <button type="button" disabled={busy} onClick={() => void onAct(`Download ${e.name}`, "/api/models/pull", { id: e.id })}>
                    {d?.state === "failed" ? "Retry" : "Download"}
                  </button>
                )}
              </td>
            </tr>
          );
        })}
        {others.map((m) => (
          <tr key={m.id}>
            <td>
              <strong>{modelName(m)}</strong>
              <div className="small muted">{m.origin === "import" ? "imported" : "downloaded"}</div>
            </td>
            <td className="nowrap">{fmtBytes(m.sizeBytes)}</td>
            <td>—</td>
            <td>
              <span className="tag tag-ok">installed</span>
            </td>
            <td className="nowrap row-actions">
              <DeleteButton m={m} serving={false} busy={busy} onAsk={setDeleting} />
            </td>
          </tr>
        ))}
      </DataTable>
      {deleting && <DeleteDialog m={deleting} onClose={() => setDeleting(null)} onAct={onAct} />}
    </section>
  );
}
