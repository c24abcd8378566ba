import { useState } from "react";
import type { InstalledModelView, ModelView, TrainabilityView } from "../../../../electron/core/api/models.js";
import { ConfirmDialog } from "../../components/ConfirmDialog.js";
import { DataTable } from "../../components/DataTable.js";
import { fmtBytes } from "../../components/format.js";
import { modelName } from "../../format/models.js";
import { TrainVerdict } from "../../components/Trainability.js";
import { modelIdPath } from "./DownloadCell.js";
import type { ModelAction } from "./useModelActions.js";

/** "On this computer": the installed chat models, each with Use and Delete (the served one is tagged active and cannot be deleted). */
export function InstalledModels({
  installed,
  active,
  servedTraining,
  busy,
  onAct,
}: {
  installed: InstalledModelView[];
  active: ModelView | null;
  servedTraining: TrainabilityView | null;
  busy: boolean;
  onAct: ModelAction;
}) {
  const [deleting, setDeleting] = useState<InstalledModelView | null>(null);
  return (
    <>
      <h2>On this computer</h2>
      <DataTable columns={["Model", "Size", "Architecture", "Context"]} actions>
        {installed.map((m) => {
          const serving = Boolean(active?.path && m.path === active.path);
          return (
            <tr key={m.id}>
              <td>
                <strong>{modelName(m)}</strong>
                <div className="small muted">{[m.origin === "import" ? "imported" : "downloaded", m.quantization].filter(Boolean).join(" · ")}</div>
                <TrainVerdict t={serving ? servedTraining : m.training} />
              </td>
              <td className="nowrap">{fmtBytes(m.sizeBytes)}</td>
              <td>{m.architecture ?? "—"}</td>
              <td>{m.contextSize ? m.contextSize.toLocaleString() : "—"}</td>
              <td className="row-actions nowrap">
                {serving ? (
                  <span className="tag tag-active">active</span>
                ) : (
                  <button type="button" disabled={busy} onClick={() => void onAct(`Use ${modelName(m)}`, "/api/models/use", { id: m.id })}>
                    Use
                  </button>
                )}
                <DeleteButton m={m} serving={serving} busy={busy} onAsk={setDeleting} />
              </td>
            </tr>
          );
        })}
      </DataTable>
      {deleting && <DeleteDialog m={deleting} onClose={() => setDeleting(null)} onAct={onAct} />}
    </>
  );
}

/** A model's name with its quantization: two quantizations of one model share its name. */
const fullName = (m: InstalledModelView) => (m.quantization ? `${modelName(m)} (${m.quantization})` : modelName(m));

/** Delete, or why not: the model serving now is refused (switch to another first). */
export function DeleteButton({ m, serving, busy, onAsk }: { m: InstalledModelView; serving: boolean; busy: boolean; onAsk: (m: InstalledModelView) => void }) {
  return (
    <button
      type="button"
      className="danger-quiet"
      disabled={busy || serving}
      title={serving ? "Serving now: switch to another model first" : undefined}
      aria-label={`Delete ${fullName(m)}`}
      onClick={() => onAsk(m)}
    >
      Delete
    </button>
  );
}

/** The delete's question: the disk it frees (none for an imported file, which stays), and that its checkpoints stay with its learning line. */
/** Asks before deleting an installed model (what is freed, what stays), then deletes it. */
export function DeleteDialog({ m, onClose, onAct }: { m: InstalledModelView; onClose: () => void; onAct: ModelAction }) {
  const name = fullName(m);
  const onConfirm = () => {
    onClose();
    void onAct(`Delete ${modelName(m)}`, `/api/models/${modelIdPath(m.id)}`, undefined, "DELETE");
  };
  return (
    <ConfirmDialog title={`Delete ${name}?`} cancelLabel="Keep it" confirmLabel="Delete" focus="cancel" onCancel={onClose} onConfirm={onConfirm}>
      <p>
        {m.origin === "import"
          ? `It is taken off this list; the file you imported stays where it is (${m.path}), so no disk space is freed.`
          : `Its file (${fmtBytes(m.diskBytes)}) is deleted from this computer, freeing that much disk space.`}
      </p>
      <p>
        {m.checkpoints > 0
          ? `What it learned stays: its ${m.checkpoints === 1 ? "checkpoint is" : `${m.checkpoints} checkpoints are`} kept, in this model's learning line. If you download or import the same file again, it serves its checkpoint again.`
          : "It has no checkpoints: nothing has been learned on it yet."}
      </p>
    </ConfirmDialog>
  );
}
