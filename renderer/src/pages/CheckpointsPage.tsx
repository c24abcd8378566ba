import { useEffect, useRef, useState } from "react";
import { messageOf } from "../api/client.js";
import { useCore, useLive } from "../api/core.js";
import type { ActivateReply } from "../../../electron/core/api/training.js";
import { readCheckpoints, type Checkpoint } from "../api/shapes.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { fileName, fmtNum, fmtTime } from "../components/format.js";
import { ImportAdapter } from "./ImportAdapter.js";
import { DataTable } from "../components/DataTable.js";
import { trapTab } from "../components/ConfirmDialog.js";
import { column, terms } from "../components/terms.js";

export function CheckpointsPage() {
  const { client, status, reloadStatus } = useCore();
  const list = useLive((c) => c.getJson("/api/checkpoints").then(readCheckpoints), ["checkpoint", "swap", "revert"]);
  // What the dialog asks to serve: a checkpoint, or "base" (the model with no adapter).
  const [confirm, setConfirm] = useState<Checkpoint | "base" | null>(null);
  const [swapping, setSwapping] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Keyboard: focus goes back to the Roll back button that opened the dialog when it is
  // cancelled, and to the outcome (done or error) when a roll back finishes.
  const opener = useRef<HTMLButtonElement | null>(null);
  const outcome = useRef<HTMLDivElement | null>(null);
  const [focusOutcome, setFocusOutcome] = useState(false);
  useEffect(() => {
    if (!focusOutcome) return;
    setFocusOutcome(false);
    outcome.current?.focus();
  }, [focusOutcome]);

  const cancel = () => {
    setConfirm(null);
    // After React has removed the dialog (its removal would take focus with it).
    setTimeout(() => opener.current?.focus(), 0);
  };

  const activate = async (c: Checkpoint | "base") => {
    const name = c === "base" ? "the model with no adapter" : c.version;
    setConfirm(null);
    setSwapping(name);
    setDone(null);
    setError(null);
    try {
      const { swap } = await client.post<ActivateReply>(`/api/checkpoints/${c === "base" ? "base" : c.n}/activate`);
      setDone(`Now serving ${name}. The next answer in Chat uses it. The swap held new requests for ${Math.round(swap.pauseMs)} ms.`);
    } catch (e) {
      setError(`Could not roll back to ${name}: ${messageOf(e)}`);
    } finally {
      setSwapping(null);
      setFocusOutcome(true);
      list.reload();
      reloadStatus();
    }
  };

  const pin = async (c: Checkpoint) => {
    try {
      await client.post(`/api/checkpoints/${c.n}/pin`, { pinned: !c.pinned });
      list.reload();
    } catch (e) {
      setError(messageOf(e));
    }
  };

  const activeN = status?.training.activeCheckpoint ?? null;
  // One source for "active" (the live status, which SSE refreshes first), so a list fetched
  // just before a swap never shows two active rows.
  const items = [...(list.data?.items ?? [])].map((c) => (status ? { ...c, active: c.n === activeN } : c)).sort((a, b) => b.n - a.n);
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
      {list.data && items.length === 0 && <p className="muted">No versions yet. Each version the assistant learns (a checkpoint of its adapter) appears here once it passes the safety check.</p>}
      {items.length > 0 && (
        <DataTable columns={[column(terms.colVersion), "Time", column(terms.colSamples), column(terms.colReward), column(terms.colKl), column(terms.colGate), showModel && "Model"]} actions>
          {items.map((c) => (
            <tr key={c.n} className={c.active ? "active-row" : undefined}>
              <td className="version-cell" id={`cp-${c.n}`}>
                <strong>{c.version}</strong> {c.active && <span className="tag tag-active">active</span>} {c.pinned && <span className="tag">pinned</span>} {c.imported && <span className="tag">imported</span>}
              </td>
              <td className="nowrap">{fmtTime(c.at)}</td>
              <td>{c.samples ?? "—"}</td>
              <td>{fmtNum(c.meanReward)}</td>
              <td>{fmtNum(c.kl, 4)}</td>
              <td>
                {c.verdict ? (
                  <span className={/pass|publish|accept/i.test(c.verdict) ? "tag tag-ok" : /revert/i.test(c.verdict) ? "tag tag-warn" : "tag tag-bad"} title={c.revertReason ?? undefined}>
                    {/revert/i.test(c.verdict) ? "rolled back" : c.verdict}
                  </span>
                ) : (
                  "—"
                )}
                {c.revertReason && <div className="small muted revert-reason">{c.revertReason}</div>}
              </td>
              {showModel && (
                <td className="clip model-cell" title={c.model ?? undefined}>
                  {c.model?.replace(/\.gguf$/i, "") ?? "—"}
                </td>
              )}
              <td className="nowrap row-actions">
                <button type="button" aria-describedby={`cp-${c.n}`} onClick={() => void pin(c)}>
                  {c.pinned ? "Unpin" : "Pin"}
                </button>
                <button
                  type="button"
                  disabled={c.active || swapping !== null || !usable(c) || !c.forServedModel}
                  title={!usable(c) ? "The safety check (publish gate) rejected this version; it is kept for inspection only" : !c.forServedModel ? `Trained on ${c.model ?? "another model"}: serve that model to use it` : undefined}
                  aria-describedby={`cp-${c.n}`}
                  onClick={(e) => {
                    opener.current = e.currentTarget;
                    setConfirm(c);
                  }}
                >
                  {isForward(c, activeN) ? "Roll forward" : "Roll back"}
                </button>
              </td>
            </tr>
          ))}
          <tr className={activeVersion === "base" ? "active-row" : undefined}>
            <td className="nowrap" id="cp-base">
              <strong>No adapter</strong> {activeVersion === "base" && <span className="tag tag-active">active</span>}
            </td>
            <td colSpan={showModel ? 6 : 5} className="muted small">
              {servedModel ?? "The base model"} as downloaded: where learning started
            </td>
            <td className="nowrap row-actions">
              <button
                type="button"
                disabled={activeVersion === "base" || swapping !== null}
                aria-describedby="cp-base"
                onClick={(e) => {
                  opener.current = e.currentTarget;
                  setConfirm("base");
                }}
              >
                Roll back
              </button>
            </td>
          </tr>
        </DataTable>
      )}
      {confirm && <ConfirmRollback target={confirm} forward={isForward(confirm, activeN)} onCancel={cancel} onConfirm={() => void activate(confirm)} />}
    </div>
  );
}

/**
 * Only a checkpoint the gate published can be served (the core refuses the others with 409); one
 * the learner rolled back by itself can be served again by hand (then it is not watched).
 */
function usable(c: Checkpoint): boolean {
  return c.verdict === null || /pass|publish|accept|revert/i.test(c.verdict);
}

/**
 * Whether serving `target` moves forward from what serves now: any checkpoint is ahead of the
 * base model, and a checkpoint is ahead of an older one; the base model is always behind.
 */
function isForward(target: Checkpoint | "base", activeN: number | null): boolean {
  return target !== "base" && (activeN === null || target.n > activeN);
}

/** `forward`: the checkpoint is newer than the one served (after a roll back). */
function ConfirmRollback({ target, forward, onCancel, onConfirm }: { target: Checkpoint | "base"; forward: boolean; onCancel(): void; onConfirm(): void }) {
  const ref = useRef<HTMLDialogElement | null>(null);
  const confirmButton = useRef<HTMLButtonElement | null>(null);
  useEffect(() => {
    ref.current?.showModal();
    // showModal focuses the first button (Cancel); React's autoFocus ran before it.
    confirmButton.current?.focus();
  }, []);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby="rb-title"
      onKeyDown={trapTab}
      onCancel={(e) => {
        // Esc: React removes the dialog (the browser would close it and restore focus itself, racing React).
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id="rb-title">
        {forward ? "Roll forward" : "Roll back"} to {target === "base" ? "the model with no adapter" : target.version}?
      </h2>
      <p>
        {target === "base" ? "The assistant answers as the base model did before it learned anything; training starts again from a fresh adapter." : "The assistant switches to this adapter now; training continues from it."}{" "}
        {forward ? "Older checkpoints stay in the list, so you can roll back again." : "Newer checkpoints stay in the list, so you can roll forward again."}
      </p>
      <div className="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" className="primary" ref={confirmButton} onClick={onConfirm}>
          {forward ? "Confirm roll forward" : "Confirm roll back"}
        </button>
      </div>
    </dialog>
  );
}
