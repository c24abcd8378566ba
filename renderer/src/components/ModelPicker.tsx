import { useState } from "react";
import { messageOf } from "../api/client.js";
import { forgetServedModelId } from "../api/chat.js";
import { useCore, useCoreEvents, useLive } from "../api/core.js";
import type { ModelsEvent, ModelSwitchEvent, UseModelReply } from "../../../electron/core/api/models.js";
import { adapterLabel } from "./format.js";
import { modelFacts as facts, modelName as nameOf, servedName } from "../format/models.js";

/** A switch under way, as the picker shows it (progress null: not loading yet). */
type SwitchNote = Pick<ModelSwitchEvent, "name" | "state"> & { progress: number | null };

const stageText: Partial<Record<ModelSwitchEvent["state"], string>> = { draining: "finishing answers in progress", loading: "loading into memory" };

/**
 * The served model, always in view: its name, size, quantization and backend, and the adapter
 * on top of it. A picker switches among the installed models (the core loads the new one at
 * once, with progress); Models gets more.
 */
export function ModelPicker() {
  const { client, status, reloadStatus } = useCore();
  const models = useLive((c) => c.getJson("/api/models"), ["models", "download"], [], 10000);
  const [switching, setSwitching] = useState<SwitchNote | null>(null);
  const [error, setError] = useState<string | null>(null);
  // The model asked for: shown, and the picker kept busy, until the status says it serves (the
  // switch's end and the status's reload arrive one after the other).
  const [asked, setAsked] = useState<string | null>(null);

  useCoreEvents(["models"], (e) => {
    const s = e.data as ModelsEvent;
    if (s.change !== "switch") return;
    if (s.state === "ready" || s.state === "failed") {
      setSwitching(null);
      forgetServedModelId();
      reloadStatus();
      if (s.error) setError(`${s.name} could not be loaded: ${s.error}`);
    } else setSwitching((cur) => ({ name: cur?.name ?? s.name, state: s.state, progress: s.progress ?? null }));
  });

  const served = status?.model ?? null;
  // Chat models only: an embedding model never serves chat.
  const installed = models.data?.installed.filter((m) => !m.embedding) ?? [];
  const current = installed.find((m) => served?.path && m.path === served.path) ?? null;
  // The model asked for serves now: the picker is free again (state adjusted while rendering, not in an effect).
  if (asked !== null && current?.id === asked) setAsked(null);

  const choose = async (id: string) => {
    const target = installed.find((m) => m.id === id);
    if (!target || target === current) return;
    setError(null);
    setAsked(id);
    setSwitching({ name: nameOf(target), state: "draining", progress: null });
    try {
      // A core that cannot switch live serves it after a restart: nothing to wait for here.
      if ((await client.post<UseModelReply>("/api/models/use", { id })).restartRequired) setAsked(null);
    } catch (e) {
      setAsked(null);
      setError(`${nameOf(target)} could not be loaded: ${messageOf(e)}`);
    } finally {
      setSwitching(null);
      forgetServedModelId();
      reloadStatus();
      models.reload();
    }
  };

  const backend = status?.backend ? status.backend.toUpperCase() : null;
  const detail = served ? [facts(served), backend].filter(Boolean).join(" · ") : "";
  return (
    <div className="model-picker">
      <div className="model-row">
        <select
          className="model-select"
          aria-label="Model"
          value={asked ?? current?.id ?? "__served"}
          disabled={switching !== null || asked !== null || installed.length === 0}
          onChange={(e) => void choose(e.target.value)}
          title={served?.path ?? undefined}
        >
          {!current && <option value="__served">{served ? servedName(served) : status ? "No model loaded" : "…"}</option>}
          {installed.map((m) => (
            <option key={m.id} value={m.id} title={facts(m) || undefined}>
              {nameOf(m)}
            </option>
          ))}
        </select>
        {switching ? (
          <span className="model-switching small" role="status">
            <span className="spinner" aria-hidden="true" /> Switching to {switching.name}: {stageText[switching.state] ?? switching.state}
            {switching.state === "loading" && switching.progress !== null ? ` ${Math.round(switching.progress * 100)} %` : "…"}
          </span>
        ) : (
          <>
            {detail && (
              <span className="model-facts small muted" aria-label="Served model details">
                {detail}
              </span>
            )}
            <span
              className={status?.adapter && status.adapter !== "base" ? "tag tag-active" : "tag"}
              title="What serves on top of the model: a checkpoint trained from your feedback, or none"
            >
              {adapterLabel(status?.adapter)}
            </span>
          </>
        )}
        {/* Not named "… models": the nav's Models link keeps a name of its own. */}
        <a className="small model-more" href="#/models" title="Download more models or import a GGUF on the Models page">
          Browse catalog
        </a>
      </div>
      {error && (
        <span className="small error-text model-error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
