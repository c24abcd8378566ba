import { useState } from "react";
import { ApiError, messageOf } from "../api/client.js";
import { useCore, useLive } from "../api/core.js";
import { readModels, trainabilityOfMemory, type CatalogEntry, type ModelInfo } from "../api/shapes.js";
import type { TrainabilityView } from "../../../electron/core/api/models.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { fmtBytes, fmtDuration, modelName } from "../components/format.js";
import { memoryNeed, TrainVerdict } from "../components/Trainability.js";
import { Card } from "./TrainingPage.js";
import { DataTable } from "../components/DataTable.js";

export function ModelsPage() {
  const { client, status } = useCore();
  const models = useLive((c) => c.getJson("/api/models").then(readModels), ["models", "download"], [], 2000);
  const [error, setError] = useState<string | null>(null);
  // An import's problem is shown under its form (where the user typed), the others at the top.
  const [importError, setImportError] = useState<string | null>(null);
  const [importPath, setImportPath] = useState("");
  const [busy, setBusy] = useState<string | null>(null);
  // The model the last import added, offered for use at once.
  const [imported, setImported] = useState<{ id: string; name: string } | null>(null);

  const act = async (label: string, path: string, body?: unknown, method: "POST" | "DELETE" = "POST") => {
    setBusy(label);
    setError(null);
    setImportError(null);
    setImported(null);
    try {
      const reply = await client.json<{ model?: { id?: string; name?: string; architecture?: string; path?: string } } | undefined>(method, path, body ?? (method === "POST" ? {} : undefined));
      const added = reply?.model;
      if (label === "Import" && added?.id) {
        // The name the list below shows for it (a file named only by its architecture goes by its file name).
        setImported({ id: added.id, name: modelName({ name: added.name ?? added.id, arch: added.architecture ?? null, path: added.path ?? null }) });
        setImportPath("");
      }
      models.reload();
    } catch (e) {
      const message = e instanceof ApiError && e.notAvailable ? `${label}: not offered by this core.` : `${label}: ${messageOf(e)}`;
      if (label === "Import") setImportError(message);
      else setError(message);
    } finally {
      setBusy(null);
    }
  };

  const active: ModelInfo | null = models.data?.active ?? status?.model ?? null;
  // The installed entry (and so the catalog entry) that is served now.
  const activeId = models.data?.installed.find((i) => active?.path && i.path === active.path)?.id ?? null;
  // The served model: the trainer's own plan once it has made one (live, /api/status), else the core's plan from the file.
  const live = status?.training.memory;
  const servedTraining: TrainabilityView | null = live ? trainabilityOfMemory(live, status?.training.backend ?? active?.training?.backend ?? "wasm") : active?.training ?? null;
  return (
    <div className="page">
      <header className="page-head">
        <h1>Models</h1>
      </header>
      {error && <ErrorNote error={error} />}
      <h2>Active model</h2>
      {active ? (
        <div className="cards">
          <Card label="Name" value={modelName(active)} wide />
          <Card label="Size" value={fmtBytes(active.sizeBytes)} />
          <Card label="Quantization" value={active.quantization ?? "—"} />
          <Card label="Context" value={active.contextSize ? `${active.contextSize.toLocaleString()} tokens` : "—"} />
          <Card label="GPU layers" value={active.gpuLayers ?? (status?.backend ? `— (${status.backend})` : "—")} />
          <Card label="Training here" value={trainingCard(servedTraining)} wide />
        </div>
      ) : (
        <p className="muted">No model loaded.</p>
      )}
      {active && servedTraining?.limit === "memory" ? (
        <p className="note note-muted" role="status">
          Too large to train here: learning needs {memoryNeed(servedTraining, servedTraining.backend)}. Chat works with the model as it is; a smaller model, or a
          machine with a GPU, can learn.
        </p>
      ) : active && (servedTraining?.limit === "architecture" || active.trainable === false) ? (
        <p className="note note-muted">This model's architecture can be served but not trained.</p>
      ) : null}
      {busy?.startsWith("Use ") && (
        <p className="note note-info" role="status">
          <span className="spinner" aria-hidden="true" /> Switching to {busy.slice(4)}: answers in progress finish first, then it loads; messages sent meanwhile wait for it.
        </p>
      )}
      {models.data?.restartRequired && (
        <p className="note note-info" role="status">
          A different model is chosen; it is served after the app restarts.
        </p>
      )}

      {models.data && models.data.installed.length > 0 && (
        <>
          <h2>On this computer</h2>
          <DataTable columns={["Model", "Size", "Architecture", "Context"]} actions>
            {models.data.installed.map((m) => (
              <tr key={m.id}>
                <td>
                  <strong>{modelName(m)}</strong>
                  <div className="small muted">{m.origin === "import" ? "imported" : "downloaded"}</div>
                  <TrainVerdict t={active?.path && m.path === active.path ? servedTraining : m.training} />
                </td>
                <td className="nowrap">{fmtBytes(m.sizeBytes)}</td>
                <td>{m.arch ?? "—"}</td>
                <td>{m.contextSize ? m.contextSize.toLocaleString() : "—"}</td>
                <td className="row-actions">
                  {active?.path && m.path === active.path ? (
                    <span className="tag tag-active">active</span>
                  ) : (
                    <button type="button" disabled={busy !== null} onClick={() => void act(`Use ${modelName(m)}`, "/api/models/use", { id: m.id })}>
                      Use
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </DataTable>
        </>
      )}

      <h2>Catalog</h2>
      {models.data?.recommendation && <p className="muted">Recommended for this computer: {models.data.recommendation}</p>}
      {models.error && <LoadProblem error={models.error} what="The model catalog" onRetry={models.reload} />}
      {models.data && models.data.catalog.length === 0 && <p className="muted">The catalog is empty.</p>}
      {models.data && models.data.catalog.length > 0 && (
        <DataTable columns={["Model", "Size", "Architecture", "Download"]} actions>
          {models.data.catalog.map((m) => (
            <CatalogRow key={m.id} m={m} serving={m.id === activeId} busy={busy !== null} onAct={act} />
          ))}
        </DataTable>
      )}

      <h2>Import a local GGUF</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (importPath.trim()) void act("Import", "/api/models/import", { path: importPath.trim() });
        }}
      >
        <input aria-label="GGUF file path" placeholder="/path/to/model.gguf" value={importPath} onChange={(e) => setImportPath(e.target.value)} />
        {window.clawrl?.openModelFile && (
          <button
            type="button"
            onClick={() => {
              window.clawrl?.openModelFile?.().then((p) => p && setImportPath(p), (e: unknown) => setError(messageOf(e)));
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
            <button type="button" className="primary" disabled={busy !== null} onClick={() => void act(`Use ${imported.name}`, "/api/models/use", { id: imported.id })}>
              Use now
            </button>
          )}
        </div>
      )}
    </div>
  );
}

function CatalogRow({ m, serving, busy, onAct }: { m: CatalogEntry; serving: boolean; busy: boolean; onAct(label: string, path: string, body?: unknown, method?: "POST" | "DELETE"): Promise<void> }) {
  const id = encodeURIComponent(m.id);
  const d = m.download;
  const active = d && /download|running|paused|queued/i.test(d.state);
  return (
    <tr>
      <td>
        <strong>{m.name}</strong>
        {m.recommended && <span className="tag tag-active">recommended</span>}
        <div className="small muted">{[m.quantization, m.license, m.serveMemoryBytes ? `serves in ${fmtBytes(m.serveMemoryBytes)}` : null].filter(Boolean).join(" · ")}</div>
        {m.notes && <div className="small muted">{m.notes}</div>}
        <TrainVerdict t={m.training} />
      </td>
      <td className="nowrap">{fmtBytes(m.sizeBytes)}</td>
      <td>{m.arch ?? "—"}</td>
      <td className="download-cell">
        {m.installed && !active ? (
          <span className="tag tag-ok">installed</span>
        ) : d ? (
          <>
            {/* A download that failed before a byte arrived has no bar to show: its error says why. */}
            {!(d.state === "failed" && d.bytes === 0) && <progress aria-label={`Download of ${m.name}`} max={d.total ?? undefined} value={d.bytes} />}
            <div className="small muted">
              {/* Speed and time left only while bytes are arriving (a paused download has neither). */}
              {[
                `${fmtBytes(d.bytes)}${d.total ? ` of ${fmtBytes(d.total)}` : ""}`,
                d.speed ? `${fmtBytes(d.speed)}/s` : null,
                d.etaSeconds !== null && /download/i.test(d.state) ? `${fmtDuration(d.etaSeconds)} left` : null,
                d.state,
              ]
                .filter(Boolean)
                .join(" · ")}
            </div>
            {d.error && <div className="small error-text">{d.error}</div>}
          </>
        ) : (
          <span className="muted">—</span>
        )}
      </td>
      <td className="nowrap row-actions">
        {serving ? (
          <span className="tag tag-active">active</span>
        ) : m.installed ? (
          <button type="button" disabled={busy} onClick={() => void onAct(`Use ${m.name}`, "/api/models/use", { id: m.id })}>
            Use
          </button>
        ) : active ? (
          <>
            {/paused/i.test(d!.state) ? (
              <button type="button" onClick={() => void onAct("Resume", `/api/models/${id}/resume`)}>
                Resume
              </button>
            ) : (
              <button type="button" onClick={() => void onAct("Pause", `/api/models/${id}/pause`)}>
                Pause
              </button>
            )}
            <button type="button" onClick={() => void onAct("Cancel", `/api/models/${id}/cancel`)}>
              Cancel
            </button>
          </>
        ) : (
          <button type="button" disabled={busy} onClick={() => void onAct(`Download ${m.name}`, "/api/models/pull", { id: m.id })}>
            {d?.state === "failed" ? "Retry" : "Download"}
          </button>
        )}
      </td>
    </tr>
  );
}

/** The active model's "Training here" card: a few words (the note below it says what is short). */
function trainingCard(t: TrainabilityView | null): string {
  if (!t) return "—";
  if (t.fits) return `Yes · ${t.backend} · context ${t.maxContext.toLocaleString()}`;
  return t.limit === "architecture" ? "Serve only" : "Too large";
}
