import { useCore, useLive } from "../api/core.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { fileName } from "../components/format.js";
import { ImportAdapter } from "./ImportAdapter.js";
import { DataTable } from "../components/DataTable.js";
import { column, terms } from "../components/terms.js";
import { useCheckpointActions } from "./checkpoints/useCheckpointActions.js";
import { BaseModelRow, CheckpointRow } from "./checkpoints/CheckpointRow.js";
import { ConfirmRollback } from "./checkpoints/ConfirmRollback.js";
import { isForward } from "./checkpoints/rollDirection.js";

export function CheckpointsPage() {
  const { status, reloadStatus } = useCore();
  const list = useLive((c) => c.getJson("/api/checkpoints"), ["checkpoint", "swap", "revert"]);
  const { confirm, swapping, done, error, outcome, ask, cancel, activate, pin } = useCheckpointActions(list.reload);

  const activeN = status?.training.activeCheckpoint ?? null;
  // One source for "active" (the live status, which SSE refreshes first), so a list fetched
  // just before a swap never shows two active rows.
  const served = list.data?.active ?? null;
  const items = [...(list.data?.checkpoints ?? [])]
    .map((c) => ({ ...c, active: status ? c.n === activeN : c.active || served === c.version }))
    .sort((a, b) => b.n - a.n);
  const activeVersion = status?.adapter ?? null;
  // Checkpoints of more than one model (the served model was switched): say which is whose.
  const showModel = items.some((c) => !c.forServedModel);
  const servedModel = status?.model?.path ? fileName(status.model.path) : null;
  return (
    <div className="page">
      <header className="page-head">
        <h1>Checkpoints</h1>
        <span className="muted">Serving: {activeVersion === null ? "—" : activeVersion === "base" ? "the model with no adapter" : activeVersion}</span>
        <ImportAdapter
          disabled={swapping !== null}
          onImported={() => {
            list.reload();
            reloadStatus();
          }}
        />
      </header>
      {swapping && (
        <div className="note note-info" role="status">
          <span className="spinner" aria-hidden="true" /> Swapping to {swapping ?? "the new adapter"}… new requests wait a moment, none are dropped.
        </div>
      )}
      {done && !swapping && (
        <div className="note note-ok" role="status" tabIndex={-1} ref={outcome}>
          {done}
        </div>
      )}
      {error && (
        <div tabIndex={-1} ref={outcome}>
          <ErrorNote error={error} />
        </div>
      )}
      {list.error && <LoadProblem error={list.error} what="Checkpoints" onRetry={list.reload} />}
      {list.data && items.length === 0 && (
        <p className="muted">No versions yet. Each version the assistant learns (a checkpoint of its adapter) appears here once it passes the safety check.</p>
      )}
      {items.length > 0 && (
        <DataTable
          columns={[
            column(terms.colVersion),
            "Time",
            column(terms.colSamples),
            column(terms.colReward),
            column(terms.colKl),
            column(terms.colGate),
            showModel && "Model",
          ]}
          actions
        >
          {items.map((c) => (
            <CheckpointRow key={c.n} c={c} activeN={activeN} showModel={showModel} swapping={swapping !== null} onPin={(c) => void pin(c)} onAsk={ask} />
          ))}
          <BaseModelRow
            active={activeVersion === "base"}
            servedModel={servedModel}
            showModel={showModel}
            swapping={swapping !== null}
            onAsk={(button) => ask("base", button)}
          />
        </DataTable>
      )}
      {confirm && <ConfirmRollback target={confirm} forward={isForward(confirm, activeN)} onCancel={cancel} onConfirm={() => void activate(confirm)} />}
    </div>
  );
}
