import { useEffect, useEffectEvent, useState } from "react";
import { ApiError, messageOf } from "../api/client.js";
import { useCore, useLive } from "../api/core.js";
import type { CatalogModelView } from "../../../electron/core/api/models.js";
import { modelName } from "../format/models.js";
import type { DownloadView } from "../../../electron/core/api/models.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { fmtBytes, fmtDuration } from "../components/format.js";
import { TrainVerdict } from "../components/Trainability.js";
import "./firstRun.css";

/**
 * Catalog ids the user chose "Download and use" for in this window: the download is used when it
 * is done (also if the user left the chat and came back meanwhile).
 */
const useWhenDone = new Set<string>();

/** What the chat shows while no model is served: the recommended model, or a GGUF file of the user's. */
export function FirstRun({ onReady }: { onReady: () => void }) {
  const { client } = useCore();
  const models = useLive((c) => c.getJson("/api/models"), ["models", "download"], [], 2000);
  const [using, setUsing] = useState<string | null>(null);
  const [useError, setUseError] = useState<{ id: string; name: string; message: string } | null>(null);

  /** POST /api/models/use: resolves once the model answers; the chat is then ready. */
  const use = async (id: string, name: string) => {
    setUsing(name);
    setUseError(null);
    await post(id, name);
  };
  const post = async (id: string, name: string) => {
    try {
      await client.post("/api/models/use", { id });
      useWhenDone.delete(id);
      onReady();
    } catch (e) {
      setUseError({ id, name, message: `Could not load ${name}: ${messageOf(e)}` });
    } finally {
      setUsing(null);
    }
  };

  const rec = models.data?.catalog.find((m) => m.recommended) ?? null;
  // A download chosen "and use" that has finished: use it, once (marked while rendering, posted by the effect below).
  const [autoUse, setAutoUse] = useState<{ id: string; name: string } | null>(null);
  if (rec && useWhenDone.has(rec.id) && autoUse?.id !== rec.id && rec.installed && (!rec.download || rec.download.state === "done")) {
    setAutoUse({ id: rec.id, name: rec.name });
    setUsing(rec.name);
    setUseError(null);
  }
  const postNow = useEffectEvent(post);
  useEffect(() => {
    if (autoUse) void postNow(autoUse.id, autoUse.name);
  }, [autoUse]);

  return (
    <section className="first-run" aria-labelledby="first-run-title">
      <h2 id="first-run-title">Welcome to ClawRL</h2>
      <p className="muted">There is no model to talk to yet. Pick one of these to start; it runs on this computer and learns from your feedback.</p>
      {using && (
        <p className="note note-info" role="status">
          <span className="spinner" aria-hidden="true" /> Loading {using}…
        </p>
      )}
      {useError && <ErrorNote error={useError.message} onRetry={() => void use(useError.id, useError.name)} />}
      <div className="first-run-options">
        <div className="first-run-option">
          <h3>Download the recommended model</h3>
          {models.error && <LoadProblem error={models.error} what="The model catalog" onRetry={models.reload} />}
          {!models.data && !models.error && <p className="small muted">Looking at this computer…</p>}
          {rec && (
            <RecommendedModel
              m={rec}
              reason={models.data?.recommendation.reason ?? null}
              busy={using !== null}
              onDownloaded={() => models.reload()}
              onUse={() => void use(rec.id, rec.name)}
            />
          )}
        </div>
        <div className="first-run-option">
          <h3>Use a model file you have</h3>
          <ImportModel busy={using !== null} onImported={(id, name) => void use(id, name)} />
        </div>
      </div>
      <p className="small muted">
        More models are on the <a href="#/models">Models</a> page.
      </p>
    </section>
  );
}

function RecommendedModel({
  m,
  reason,
  busy,
  onDownloaded,
  onUse,
}: {
  m: CatalogModelView;
  reason: string | null;
  busy: boolean;
  onDownloaded: () => void;
  onUse: () => void;
}) {
  const { client } = useCore();
  const [error, setError] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  const d = m.download;
  const downloading = d !== null && /download|queued/i.test(d.state);

  const pull = async () => {
    useWhenDone.add(m.id);
    setStarting(true);
    setError(null);
    try {
      await client.post("/api/models/pull", { id: m.id });
      onDownloaded();
    } catch (e) {
      useWhenDone.delete(m.id);
      setError(
        e instanceof ApiError && e.notAvailable ? "Downloads are not offered by the assistant's engine." : `The download did not start: ${messageOf(e)}`,
      );
    } finally {
      setStarting(false);
    }
  };

  return (
    <div className="first-run-model">
      <div>
        <strong>{m.name}</strong> <span className="tag tag-active">recommended</span>
      </div>
      <div className="small muted">
        {[
          fmtBytes(m.sizeBytes) + " download",
          m.serveMemoryBytes ? `needs about ${fmtBytes(m.serveMemoryBytes)} of memory to run` : null,
          m.quantization,
          m.license,
        ]
          .filter(Boolean)
          .join(" · ")}
      </div>
      <TrainVerdict t={m.training} />
      {reason && <div className="small muted">{reason}</div>}
      {/* A download that failed before a byte arrived has nothing to show but its error. */}
      {d && d.state !== "done" && !(d.state === "failed" && d.bytes === 0) && <DownloadProgress name={m.name} d={d} />}
      {error && <ErrorNote error={error} onRetry={() => void pull()} />}
      {d?.state === "failed" && <ErrorNote error={d.error ?? "The download failed."} onRetry={() => void pull()} />}
      <div className="first-run-actions">
        {m.installed ? (
          <button type="button" className="primary" disabled={busy} onClick={onUse}>
            Use {m.name}
          </button>
        ) : downloading ? null : d?.state === "paused" ? (
          <button type="button" className="primary" disabled={starting} onClick={() => void pull()}>
            Resume download
          </button>
        ) : d?.state === "failed" ? null : (
          <button type="button" className="primary" disabled={starting || busy} onClick={() => void pull()}>
            Download and use
          </button>
        )}
      </div>
    </div>
  );
}

/** The bar with bytes, speed and time left; the text is a live region for screen readers. */
function DownloadProgress({ name, d }: { name: string; d: DownloadView }) {
  const active = /download/i.test(d.state);
  const text = [
    `${fmtBytes(d.bytes)}${d.total ? ` of ${fmtBytes(d.total)}` : ""}`,
    active && d.speed ? `${fmtBytes(d.speed)}/s` : null,
    active && d.etaSeconds !== null ? `${fmtDuration(d.etaSeconds)} left` : null,
    active ? "downloading" : d.state,
  ]
    .filter(Boolean)
    .join(" · ");
  return (
    <div className="first-run-progress">
      <progress aria-label={`Download of ${name}`} max={d.total ?? undefined} value={d.bytes} />
      <div className="small muted" role="status" aria-live="polite">
        {text}
      </div>
    </div>
  );
}

function ImportModel({ busy, onImported }: { busy: boolean; onImported: (id: string, name: string) => void }) {
  const { client } = useCore();
  const [path, setPath] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [importing, setImporting] = useState(false);

  const importFile = async (file: string) => {
    setImporting(true);
    setError(null);
    try {
      const r = await client.post<{ model?: { id?: string; name?: string; architecture?: string; path?: string } }>("/api/models/import", { path: file });
      const m = r.model;
      if (!m?.id) throw new Error("the assistant's engine did not say which model it added");
      onImported(m.id, modelName({ name: m.name ?? m.id, architecture: m.architecture ?? null, path: m.path ?? null }));
    } catch (e) {
      setError(`Could not import that file: ${messageOf(e)}`);
    } finally {
      setImporting(false);
    }
  };
  // The desktop app's file picker (absent in a browser).
  const bridge = window.clawrl;

  return (
    <>
      <p className="small muted">A GGUF file (llama.cpp's model format) already on this computer.</p>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (path.trim()) void importFile(path.trim());
        }}
      >
        <input aria-label="GGUF file path" placeholder="/path/to/model.gguf" value={path} onChange={(e) => setPath(e.target.value)} />
        {bridge?.openModelFile && (
          <button
            type="button"
            onClick={() => {
              bridge.openModelFile().then(
                (p) => p && setPath(p),
                (e: unknown) => setError(messageOf(e)),
              );
            }}
          >
            Choose file…
          </button>
        )}
        <button type="submit" disabled={!path.trim() || importing || busy}>
          {importing ? "Importing…" : "Import and use"}
        </button>
      </form>
      {error && <ErrorNote error={error} />}
    </>
  );
}
