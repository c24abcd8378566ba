import { useEffect, useRef, useState } from "react";
import { useAdapterImport } from "./checkpoints/useAdapterImport.js";
import { ImportOutcomeNote } from "./checkpoints/ImportOutcomeNote.js";

/**
 * The Checkpoints page's "Import adapter…": a LoRA trained elsewhere (a PEFT directory or a
 * llama.cpp LoRA .gguf on this machine) becomes a candidate checkpoint through
 * POST /api/checkpoints/import: checked against the served model, converted, and served only
 * if the publish gate passes it. The dialog shows the outcome; `onImported` reloads the list.
 */
export function ImportAdapter({ disabled, onImported }: { disabled?: boolean; onImported: () => void }) {
  const [open, setOpen] = useState(false);
  const opener = useRef<HTMLButtonElement | null>(null);
  return (
    <>
      <button type="button" ref={opener} disabled={disabled} onClick={() => setOpen(true)}>
        Import adapter…
      </button>
      {open && (
        <ImportDialog
          onClose={(imported) => {
            setOpen(false);
            if (imported) onImported();
            setTimeout(() => opener.current?.focus(), 0);
          }}
        />
      )}
    </>
  );
}

function ImportDialog({ onClose }: { onClose: (imported: boolean) => void }) {
  const ref = useRef<HTMLDialogElement | null>(null);
  const input = useRef<HTMLInputElement | null>(null);
  const outcomeRef = useRef<HTMLDivElement | null>(null);
  const { path, setPath, busy, outcome, imported, submit, choose } = useAdapterImport();
  useEffect(() => {
    ref.current?.showModal();
    input.current?.focus();
  }, []);
  useEffect(() => {
    if (outcome) outcomeRef.current?.focus();
  }, [outcome]);

  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby="imp-title"
      onCancel={(e) => {
        e.preventDefault();
        if (!busy) onClose(imported);
      }}
    >
      <h2 id="imp-title">Import adapter</h2>
      <p className="small">
        A LoRA adapter trained elsewhere, on this machine: a Hugging Face PEFT directory (<code>adapter_config.json</code> and{" "}
        <code>adapter_model.safetensors</code>) or a llama.cpp LoRA <code>.gguf</code> file. It is checked against the served model, converted, and goes through
        the publish gate like any checkpoint: it is served only if the gate passes it.
      </p>
      <form onSubmit={(e) => void submit(e)}>
        <label className="small" htmlFor="imp-path">
          Adapter path
        </label>
        <input
          id="imp-path"
          ref={input}
          style={{ width: "100%", boxSizing: "border-box", margin: "4px 0 12px" }}
          placeholder="/path/to/peft-adapter or /path/to/adapter.gguf"
          value={path}
          disabled={busy}
          onChange={(e) => setPath(e.target.value)}
        />
        {busy && (
          <div className="note note-info" role="status">
            <span className="spinner" aria-hidden="true" /> Checking the adapter and running the publish gate…
          </div>
        )}
        <div tabIndex={-1} ref={outcomeRef}>
          <ImportOutcomeNote outcome={outcome} />
        </div>
        <div className="actions">
          {window.clawrl?.openModelFile && (
            <button type="button" disabled={busy} onClick={choose}>
              Choose .gguf…
            </button>
          )}
          <button type="button" disabled={busy} onClick={() => onClose(imported)}>
            {imported ? "Close" : "Cancel"}
          </button>
          <button type="submit" className="primary" disabled={busy || !path.trim()}>
            Import
          </button>
        </div>
      </form>
    </dialog>
  );
}
