import { messageOf } from "../../api/client.js";
import { ErrorNote } from "../../components/Notices.js";
import type { ModelAction } from "./useModelActions.js";

/** "Import a local GGUF": a path (typed or chosen), its error, and the imported model offered for use at once. */
export function ImportModelForm({
  importPath,
  setImportPath,
  importError,
  imported,
  activeId,
  busy,
  onAct,
  onError,
}: {
  importPath: string;
  setImportPath: (p: string) => void;
  importError: string | null;
  imported: { id: string; name: string } | null;
  activeId: string | null;
  busy: string | null;
  onAct: ModelAction;
  onError: (message: string) => void;
}) {
  return (
    <>
      <h2>Import a local GGUF</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (importPath.trim()) void onAct("Import", "/api/models/import", { path: importPath.trim() });
        }}
      >
        <input aria-label="GGUF file path" placeholder="/path/to/model.gguf" value={importPath} onChange={(e) => setImportPath(e.target.value)} />
        {window.clawrl?.openModelFile && (
          <button
            type="button"
            onClick={() => {
              window.clawrl?.openModelFile?.().then(
                (p) => p && setImportPath(p),
                (e: unknown) => onError(messageOf(e)),
              );
            }}
          >
            Choose file…
          </button>
        )}
        <button type="submit" disabled={!importPath.trim() || busy !== null}>
          {busy === "Import" ? "Importing…" : "Import"}
        </button>
      </form>
      {importError && <ErrorNote error={importError} />}
      {imported && (
        <div className="note note-ok" role="status">
          <span>Imported {imported.name}</span>
          {imported.id !== activeId && (
            <button
              type="button"
              className="primary"
              disabled={busy !== null}
              onClick={() => void onAct(`Use ${imported.name}`, "/api/models/use", { id: imported.id })}
            >
              Use now
            </button>
          )}
        </div>
      )}
    </>
  );
}
