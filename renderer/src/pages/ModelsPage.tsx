import { useCore, useLive } from "../api/core.js";
import type { ModelView, TrainabilityView } from "../../../electron/core/api/models.js";
import { activeModelOf } from "../format/models.js";
import { trainabilityOfMemory } from "../format/training.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { DataTable } from "../components/DataTable.js";
import { useModelActions } from "./models/useModelActions.js";
import { ActiveModel } from "./models/ActiveModel.js";
import { InstalledModels } from "./models/InstalledModels.js";
import { CatalogRow } from "./models/CatalogRow.js";
import { ImportModelForm } from "./models/ImportModelForm.js";
import { LoadSettingsPanels } from "./models/LoadSettings.js";
import { HubSearch } from "./models/HubSearch.js";
import { EmbeddingModels } from "./models/EmbeddingModels.js";
import "./models/models.css";

export function ModelsPage() {
  const { status } = useCore();
  const models = useLive((c) => c.getJson("/api/models"), ["models", "download"], [], 2000);
  const { act, busy, error, setError, importError, importPath, setImportPath, imported } = useModelActions(models.reload);

  // Embedding models have their own section (they never serve chat).
  const chat = models.data?.installed.filter((m) => !m.embedding) ?? [];
  const active: ModelView | null = activeModelOf(models.data?.active, status);
  // The installed entry (and so the catalog entry) that is served now.
  const activeId = models.data?.installed.find((i) => active?.path && i.path === active.path)?.id ?? null;
  // The served model: the trainer's own plan once it has made one (live, /api/status), else the core's plan from the file.
  const live = status?.training.memory;
  const servedTraining: TrainabilityView | null = live
    ? trainabilityOfMemory(live, status?.training.backend ?? active?.training?.backend ?? "wasm")
    : (active?.training ?? null);
  return (
    <div className="page">
      <header className="page-head">
        <h1>Models</h1>
      </header>
      {error && <ErrorNote error={error} />}
      <ActiveModel active={active} servedTraining={servedTraining} backend={status?.backend} />
      {busy?.startsWith("Use ") && (
        <p className="note note-info" role="status">
          <span className="spinner" aria-hidden="true" /> Switching to {busy.slice(4)}: answers in progress finish first, then it loads; messages sent meanwhile
          wait for it.
        </p>
      )}
      {models.data?.restartRequired && (
        <p className="note note-info" role="status">
          A different model is chosen; it is served after the app restarts.
        </p>
      )}

      {chat.length > 0 && <InstalledModels installed={chat} active={active} servedTraining={servedTraining} busy={busy !== null} onAct={act} />}
      <LoadSettingsPanels installed={chat} activePath={active?.path} />

      <HubSearch downloads={models.data?.downloads ?? []} installed={models.data?.installed ?? []} activePath={active?.path ?? null} busy={busy} onAct={act} />

      <h2>Catalog</h2>
      {models.data?.recommendation.reason && <p className="muted">Recommended for this computer: {models.data.recommendation.reason}</p>}
      {models.error && <LoadProblem error={models.error} what="The model catalog" onRetry={models.reload} />}
      {models.data && models.data.catalog.length === 0 && <p className="muted">The catalog is empty.</p>}
      {models.data && models.data.catalog.length > 0 && (
        <DataTable columns={["Model", "Size", "Architecture", "Download"]} actions>
          {models.data.catalog.map((m) => (
            <CatalogRow key={m.id} m={m} serving={m.id === activeId} busy={busy !== null} onAct={act} />
          ))}
        </DataTable>
      )}

      {models.data && (
        <EmbeddingModels catalog={models.data.embeddingCatalog} installed={models.data.installed.filter((m) => m.embedding)} busy={busy !== null} onAct={act} />
      )}

      <ImportModelForm
        importPath={importPath}
        setImportPath={setImportPath}
        importError={importError}
        imported={imported}
        activeId={activeId}
        busy={busy}
        onAct={act}
        onError={setError}
      />
    </div>
  );
}
