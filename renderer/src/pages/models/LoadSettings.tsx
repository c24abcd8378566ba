import { useState } from "react";
import { useCore, useLive } from "../../api/core.js";
import { messageOf } from "../../api/client.js";
import type { InstalledModelView } from "../../../../electron/core/api/models.js";
import type { LoadBackend, ModelLoadPatch, ModelLoadReply, ModelLoadSettings, ModelReloadReply } from "../../../../electron/core/api/modelLoad.js";
import { modelName } from "../../format/models.js";
import { ErrorNote } from "../../components/Notices.js";
import { TermText } from "../../components/TermLabel.js";
import type { Term } from "../../components/terms.js";
import "./loadSettings.css";

/** Plain words for each load setting, with the exact term (the same as `clawrl serve`'s flag) in the details line. */
const words = {
  contextSize: { label: "How much of the conversation it reads at once (tokens)", term: "context length, --context" },
  gpuLayers: { label: "How much of the model runs on the graphics card", term: "GPU layers, --gpu-layers" },
  threads: { label: "Processor threads it uses", term: "threads, --threads" },
  backend: { label: "Where it runs", term: "backend, --gpu" },
} satisfies Record<keyof ModelLoadSettings, Term>;

/** `clawrl serve`'s flag for each setting (api/modelLoad.ts LOAD_FLAGS; the renderer imports the contract's types only). */
const FLAGS: Record<keyof ModelLoadSettings, string> = { contextSize: "context", gpuLayers: "gpu-layers", threads: "threads", backend: "gpu" };

const BACKEND_WORDS: Record<LoadBackend, string> = {
  auto: "Automatic: the fastest that works",
  cpu: "Processor only (CPU)",
  vulkan: "Graphics card (Vulkan)",
  cuda: "NVIDIA graphics card (CUDA)",
  metal: "Mac graphics (Metal)",
};

const RUNS_ON: Record<string, string> = {
  cpu: "the processor (CPU)",
  vulkan: "the graphics card (Vulkan)",
  cuda: "the NVIDIA graphics card (CUDA)",
  metal: "Mac graphics (Metal)",
};

/** `/api/models/<id>`: an id may hold slashes (hf:owner/repo/file), each segment encoded, as the core's model routes take it. */
const modelPath = (id: string) => `/api/models/${id.split("/").map(encodeURIComponent).join("/")}` as const;

const auto = (n: number | null | undefined) => (n === null || n === undefined ? "Auto" : `Auto (${n.toLocaleString()})`);

/** The form's fields as typed (text, so that empty means "the app's choice"). */
interface Draft {
  contextSize: string;
  gpuLayers: string;
  threads: string;
  backend: LoadBackend | "";
}

function draftOf(s: ModelLoadSettings): Draft {
  return {
    contextSize: s.contextSize === null ? "" : String(s.contextSize),
    gpuLayers: s.gpuLayers === null ? "" : String(s.gpuLayers),
    threads: s.threads === null ? "" : String(s.threads),
    backend: s.backend ?? "",
  };
}

/** The PUT body: empty fields go back to the app's choice; the core checks the values (400 with the reason). */
function patchOf(d: Draft): ModelLoadPatch {
  const num = (v: string) => (v.trim() === "" ? null : Number(v));
  const layers = d.gpuLayers.trim();
  return {
    contextSize: num(d.contextSize),
    threads: num(d.threads),
    gpuLayers: layers === "" ? null : layers === "auto" || layers === "max" ? layers : Number(layers),
    backend: d.backend === "" ? null : d.backend,
  };
}

/** "Load settings": one panel per installed model (the serving one open), mounted on the Models page. */
export function LoadSettingsPanels({ installed, activePath }: { installed: InstalledModelView[]; activePath?: string | null }) {
  if (installed.length === 0) return null;
  return (
    <section className="load-settings" aria-labelledby="load-settings-title">
      <h2 id="load-settings-title">Load settings</h2>
      <p className="muted small">
        How each model is loaded: applied when it loads, kept per model.{" "}
        <span className="term-detail">The same values as clawrl serve&apos;s flags, which win for their run.</span>
      </p>
      {installed.map((m) => (
        <ModelLoadPanel key={m.id} model={m} serving={!!activePath && m.path === activePath} />
      ))}
    </section>
  );
}

/** One model's panel: open for the model serving now; its settings are fetched while it is open. */
function ModelLoadPanel({ model, serving }: { model: InstalledModelView; serving: boolean }) {
  const [userOpen, setUserOpen] = useState<boolean | null>(null);
  const open = userOpen ?? serving;
  return (
    <details className="load-panel" open={open} onToggle={(e) => setUserOpen(e.currentTarget.open)}>
      <summary>
        <strong>{modelName(model)}</strong>
        <span className="small muted load-file">{model.path.split(/[\\/]/).pop()}</span>
        {serving && <span className="tag tag-active">serving</span>}
      </summary>
      {open && <PanelBody model={model} />}
    </details>
  );
}

function PanelBody({ model }: { model: InstalledModelView }) {
  const path = `${modelPath(model.id)}/load-settings` as const;
  const live = useLive((c) => c.getJson(path), ["models"], [path]);
  // Kept here: the form starts again from the stored values after a save (its key), the outcome's words stay.
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  if (live.error)
    // 404: the engine does not know this model (it is not installed there); anything else can be retried.
    return "status" in live.error && live.error.status === 404 ? (
      <p className="muted small load-form">{live.error.message}</p>
    ) : (
      <div className="load-form">
        <ErrorNote error={live.error} onRetry={live.reload} />
      </div>
    );
  if (!live.data) return <p className="muted small load-form">Loading…</p>;
  return <LoadForm key={JSON.stringify(live.data.settings)} reply={live.data} onChanged={live.reload} ui={{ done, setDone, error, setError, busy, setBusy }} />;
}

/** What the panel keeps across the form's remounts: the outcome's words, an error, the action under way. */
interface PanelUi {
  done: string | null;
  setDone: (s: string | null) => void;
  error: string | null;
  setError: (s: string | null) => void;
  busy: string | null;
  setBusy: (s: string | null) => void;
}

function LoadForm({ reply, onChanged, ui }: { reply: ModelLoadReply; onChanged: () => void; ui: PanelUi }) {
  const { done, setDone, error, setError, busy, setBusy } = ui;
  const { client, reloadStatus } = useCore();
  const [draft, setDraft] = useState<Draft>(() => draftOf(reply.settings));
  const dirty = JSON.stringify(draft) !== JSON.stringify(draftOf(reply.settings));
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => {
    setDraft((d) => ({ ...d, [k]: v }));
    setDone(null);
  };
  const id = reply.id;
  const base = modelPath(id);
  const fieldId = (k: string) => `load-${k}-${id.replace(/[^A-Za-z0-9_-]/g, "_")}`;

  const save = async (): Promise<boolean> => {
    setError(null);
    try {
      await client.json<ModelLoadReply>("PUT", `${base}/load-settings`, patchOf(draft));
      return true;
    } catch (e) {
      setError(messageOf(e));
      return false;
    }
  };
  const onSave = async () => {
    setBusy("Saving");
    if (await save()) setDone(reply.serving ? "Saved. Reload to apply them now." : "Saved: they apply when this model is next loaded.");
    setBusy(null);
    onChanged();
  };
  const onReload = async () => {
    setBusy("Reloading");
    setDone(null);
    if (!dirty || (await save())) {
      try {
        const r = await client.post<ModelReloadReply>("/api/models/reload", { id });
        setDone(`Reloaded in ${(r.ms / 1000).toFixed(1)} s: context ${r.serving?.contextSize.toLocaleString() ?? "?"} tokens.`);
      } catch (e) {
        setError(messageOf(e));
      }
    }
    setBusy(null);
    reloadStatus();
    onChanged();
  };

  const { serving, overrides } = reply;
  const overridden = (Object.keys(overrides) as (keyof ModelLoadSettings)[]).filter((k) => overrides[k] !== undefined);
  return (
    <form
      className="load-form"
      // The core checks the values against the model and the machine and says why one is refused (the browser's bubble would not).
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void onSave();
      }}
    >
      {serving && <ServingNow serving={serving} />}
      {reply.notice && (
        <p className="note note-warn" role="status">
          {reply.notice}
        </p>
      )}
      {overridden.length > 0 && (
        <p className="note note-info small">
          For this run, clawrl serve was started with {overridden.map((k) => `--${FLAGS[k]} ${String(overrides[k])}`).join(", ")}: that wins over the value here
          until the app restarts.
        </p>
      )}
      <LoadFields draft={draft} set={set} reply={reply} fieldId={fieldId} />
      {error && <ErrorNote error={error} />}
      {done && (
        <p className="note note-info" role="status">
          {done}
        </p>
      )}
      <div className="load-actions">
        <button type="submit" disabled={busy !== null || !dirty}>
          Save
        </button>
        {serving && (
          <button
            type="button"
            className="primary"
            disabled={busy !== null || (!dirty && !serving.reloadNeeded)}
            title="Loads this model again with these settings; its learned changes stay; answers in progress finish first."
            onClick={() => void onReload()}
          >
            {busy === "Reloading" ? "Reloading…" : "Reload with these settings"}
          </button>
        )}
        {busy && <span className="spinner" aria-hidden="true" />}
      </div>
    </form>
  );
}

/** What serves now, in plain words, with the exact values in the details line. */
function ServingNow({ serving }: { serving: NonNullable<ModelLoadReply["serving"]> }) {
  return (
    <p className="load-now" role="status" data-testid="load-serving">
      Serving now: context <strong>{serving.contextSize.toLocaleString()}</strong> tokens · {serving.threads ?? "?"} thread
      {serving.threads === 1 ? "" : "s"} · on {RUNS_ON[serving.backend] ?? serving.backend}
      {serving.gpuLayers > 0 ? `, ${serving.gpuLayers} layers on the GPU` : ""} ·{" "}
      {serving.adapter === "base" ? "no learned changes" : `learned version ${serving.adapter}`}
      <span className="term-detail">
        context {serving.contextSize}, threads {serving.threads ?? "?"}, backend {serving.backend}, GPU layers {serving.gpuLayers}, adapter {serving.adapter}
      </span>
    </p>
  );
}

/** The four fields; empty means the app's choice (shown as the placeholder). */
function LoadFields(p: { draft: Draft; set: <K extends keyof Draft>(k: K, v: Draft[K]) => void; reply: ModelLoadReply; fieldId: (k: string) => string }) {
  const { draft, set, fieldId } = p;
  const { defaults: d, limits } = p.reply;
  return (
    <div className="load-fields">
      <label htmlFor={fieldId("ctx")}>
        <TermText t={words.contextSize} />
        <input
          id={fieldId("ctx")}
          type="number"
          inputMode="numeric"
          min={16}
          max={limits.trainContextSize ?? undefined}
          placeholder={auto(d.contextSize)}
          value={draft.contextSize}
          onChange={(e) => set("contextSize", e.target.value)}
        />
        <span className="small muted">
          {limits.trainContextSize ? `Trained for up to ${limits.trainContextSize.toLocaleString()}. Empty: automatic.` : "Empty: automatic."}
        </span>
      </label>
      <label htmlFor={fieldId("layers")}>
        <TermText t={words.gpuLayers} />
        <input
          id={fieldId("layers")}
          type="text"
          list={fieldId("layers-list")}
          placeholder={auto(d.gpuLayers)}
          value={draft.gpuLayers}
          onChange={(e) => set("gpuLayers", e.target.value)}
        />
        <datalist id={fieldId("layers-list")}>
          <option value="auto" />
          <option value="max" />
        </datalist>
        <span className="small muted">
          {limits.layers ? `A number up to ${limits.layers}, or max for all.` : "A number, or max for all."} Empty: as many as fit.
        </span>
      </label>
      <label htmlFor={fieldId("threads")}>
        <TermText t={words.threads} />
        <input
          id={fieldId("threads")}
          type="number"
          inputMode="numeric"
          min={1}
          max={limits.cpuThreads}
          placeholder={auto(d.threads)}
          value={draft.threads}
          onChange={(e) => set("threads", e.target.value)}
        />
        <span className="small muted">This computer runs {limits.cpuThreads} at once.</span>
      </label>
      <label htmlFor={fieldId("backend")}>
        <TermText t={words.backend} />
        <select id={fieldId("backend")} value={draft.backend} onChange={(e) => set("backend", e.target.value as Draft["backend"])}>
          <option value="">As in Settings ({BACKEND_WORDS[d.backend].split(":")[0].toLowerCase()})</option>
          {(Object.keys(BACKEND_WORDS) as LoadBackend[]).map((b) => (
            <option key={b} value={b}>
              {BACKEND_WORDS[b]}
            </option>
          ))}
        </select>
        <span className="small muted">A graphics card that fails falls back to the processor.</span>
      </label>
    </div>
  );
}
