import { useState } from "react";
import { ApiError, messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { modelName } from "../../format/models.js";

/** Runs one model action (use, download, pause, import …): what runs now, its error, and the model an import just added. */
export type ModelAction = (label: string, path: string, body?: unknown, method?: "POST" | "DELETE") => Promise<void>;

/** The Models page's actions against the core, one at a time, with their errors and the import form's path. */
export function useModelActions(onDone: () => void) {
  const { client } = useCore();
  const [error, setError] = useState<string | null>(null);
  // An import's problem is shown under its form (where the user typed), the others at the top.
  const [importError, setImportError] = useState<string | null>(null);
  const [importPath, setImportPath] = useState("");
  const [busy, setBusy] = useState<string | null>(null);
  // The model the last import added, offered for use at once.
  const [imported, setImported] = useState<{ id: string; name: string } | null>(null);

  const act: ModelAction = async (label, path, body, method = "POST") => {
    setBusy(label);
    setError(null);
    setImportError(null);
    setImported(null);
    try {
      const reply = await client.json<{ model?: { id?: string; name?: string; architecture?: string; path?: string } } | undefined>(
        method,
        path,
        body ?? (method === "POST" ? {} : undefined),
      );
      const added = reply?.model;
      if (label === "Import" && added?.id) {
        // The name the list below shows for it (a file named only by its architecture goes by its file name).
        setImported({ id: added.id, name: modelName({ name: added.name ?? added.id, architecture: added.architecture ?? null, path: added.path ?? null }) });
        setImportPath("");
      }
      onDone();
    } catch (e) {
      const message = e instanceof ApiError && e.notAvailable ? `${label}: not offered by the assistant's engine.` : `${label}: ${messageOf(e)}`;
      if (label === "Import") setImportError(message);
      else setError(message);
    } finally {
      setBusy(null);
    }
  };

  return { act, busy, error, setError, importError, importPath, setImportPath, imported };
}
