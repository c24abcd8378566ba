import type { InstalledModelView, ModelView, TrainabilityView } from "../../../../electron/core/api/models.js";
import { DataTable } from "../../components/DataTable.js";
import { fmtBytes } from "../../components/format.js";
import { modelName } from "../../format/models.js";
import { TrainVerdict } from "../../components/Trainability.js";
import type { ModelAction } from "./useModelActions.js";

/** "On this computer": the installed models, each with a Use button (the served one is tagged active). */
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
  return (
    <>
      <h2>On this computer</h2>
      <DataTable columns={["Model", "Size", "Architecture", "Context"]} actions>
        {installed.map((m) => (
          <tr key={m.id}>
            <td>
              <strong>{modelName(m)}</strong>
              <div className="small muted">{m.origin === "import" ? "imported" : "downloaded"}</div>
              <TrainVerdict t={active?.path && m.path === active.path ? servedTraining : m.training} />
            </td>
            <td className="nowrap">{fmtBytes(m.sizeBytes)}</td>
            <td>{m.architecture ?? "—"}</td>
            <td>{m.contextSize ? m.contextSize.toLocaleString() : "—"}</td>
            <td className="row-actions">
              {active?.path && m.path === active.path ? (
                <span className="tag tag-active">active</span>
              ) : (
                <button type="button" disabled={busy} onClick={() => void onAct(`Use ${modelName(m)}`, "/api/models/use", { id: m.id })}>
                  Use
                </button>
              )}
            </td>
          </tr>
        ))}
      </DataTable>
    </>
  );
}
