import { useEffect, useRef, useState, type FormEvent } from "react";
import { messageOf } from "../api/client.js";
import { useCore } from "../api/core.js";
import type { ImportReply } from "../../../electron/core/api/training.js";
import { ErrorNote } from "../components/Notices.js";

type Outcome = { kind: "published" | "rejected"; version: string; reasons: string[]; warnings: string[]; pauseMs: number | null } | { kind: "error"; message: string };

/**
 * The Checkpoints page's "Import adapter…": a LoRA trained elsewhere (a PEFT directory or a
 * llama.cpp LoRA .gguf on this machine) becomes a candidate checkpoint through
 * POST /api/checkpoints/import: checked against the served model, converted, and served only
 * if the publish gate passes it. The dialog shows the outcome; `onImported` reloads the list.
 */
export function ImportAdapter({ disabled, onImported }: { disabled?: boolean; onImported(): void }) {
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

function ImportDialog({ onClose }: { onClose(imported: boolean): void }) {
  const { client } = useCore();
  const ref = useRef<HTMLDialogElement | null>(null);
  const input = useRef<HTMLInputElement | null>(null);
  const outcomeRef = useRef<HTMLDivElement | null>(null);
  const [path, setPath] = useState("");
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  useEffect(() => {
    ref.current?.showModal();
    input.current?.focus();
  }, []);
  useEffect(() => {
    if (outcome) outcomeRef.current?.focus();
  }, [outcome]);
  const imported = outcome !== null && outcome.kind !== "error";

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!path.trim() || busy) return;
    setBusy(true);
    setOutcome(null);
    try {
      const r = await client.post<ImportReply>("/api/checkpoints/import", { path: path.trim() });
      setOutcome({
        kind: r.checkpoint.verdict === "published" ? "published" : "rejected",
        version: r.checkpoint.version,
        reasons: r.checkpoint.gate.reasons,
        warnings: r.imported.warnings,
        pauseMs: r.swap?.pauseMs ?? null,
      });
    } catch (err) {
      // The core names the path first; the field shows it already.
      const m = messageOf(err);
      const prefix = `cannot import ${path.trim()}: `;
      setOutcome({ kind: "error", message: m.startsWith(prefix) ? m.slice(prefix.length) : m });
    } finally {
      setBusy(false);
    }
  };

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
        A LoRA adapter trained elsewhere, on this machine: a Hugging Face PEFT directory (<code>adapter_config.json</code> and <code>adapter_model.safetensors</code>) or a
        llama.cpp LoRA <code>.gguf</code> file. It is checked against the served model, converted, and goes through the publish gate like any checkpoint: it is served only if
        the gate passes it.
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
          {outcome?.kind === "published" && (
            <div className="note note-ok note-block" role="status">
              Imported as <strong>{outcome.version}</strong>. The publish gate passed it and it is served now
              {outcome.pauseMs !== null ? ` (the swap held new requests for ${Math.round(outcome.pauseMs)} ms)` : ""}.
              {outcome.warnings.map((w) => (
                <div key={w} className="small">
                  Note: {w}
                </div>
              ))}
            </div>
          )}
          {outcome?.kind === "rejected" && (
            <div className="note note-muted note-block" role="status">
              Imported as <strong>{outcome.version}</strong>, but the publish gate rejected it: {outcome.reasons.join("; ") || "no reason given"}. It is kept for inspection; the
              served adapter is unchanged.
              {outcome.warnings.map((w) => (
                <div key={w} className="small">
                  Note: {w}
                </div>
              ))}
            </div>
          )}
          {outcome?.kind === "error" && <ErrorNote error={`Not imported: ${outcome.message}`} />}
        </div>
        <div className="actions">
          {window.clawrl?.openModelFile && (
            <button
              type="button"
              disabled={busy}
              onClick={() => {
                window.clawrl?.openModelFile?.().then((p) => p && setPath(p), (err: unknown) => setOutcome({ kind: "error", message: messageOf(err) }));
              }}
            >
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
