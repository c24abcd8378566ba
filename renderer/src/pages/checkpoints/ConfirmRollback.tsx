import { useEffect, useRef } from "react";
import type { CheckpointView } from "../../../../electron/core/api/training.js";
import { trapTab } from "../../components/ConfirmDialog.js";

/** `forward`: the checkpoint is newer than the one served (after a roll back). */
export function ConfirmRollback({
  target,
  forward,
  onCancel,
  onConfirm,
}: {
  target: CheckpointView | "base";
  forward: boolean;
  onCancel: () => void;
  onConfirm: () => void;
}) {
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
        {target === "base"
          ? "The assistant answers as the base model did before it learned anything; training starts again from a fresh adapter."
          : "The assistant switches to this adapter now; training continues from it."}{" "}
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
