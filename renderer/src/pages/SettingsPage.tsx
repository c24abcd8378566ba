import { useEffect, useRef, useState } from "react";
import { ApiError, messageOf } from "../api/client.js";
import { servedModelId } from "../api/chat.js";
import { useCore, useLive } from "../api/core.js";
import { readSettings, type JudgeSource, type Settings } from "../api/shapes.js";
import { CopyButton } from "../components/Markdown.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { readChatDefaults, type GenerationSettings } from "../api/generation.js";
import { TermText } from "../components/TermLabel.js";
import { engineName, terms } from "../components/terms.js";
import { useUnsavedChanges } from "../components/unsavedChanges.js";
import { ChatDefaultsSection } from "./ChatDefaultsSection.js";
import { MachineCheck } from "./settings/MachineCheck.js";
import { openClawSnippet } from "../api/openclawSnippet.js";


function emptyJudge(kind: JudgeSource["kind"]): JudgeSource {
  if (kind === "gguf") return { kind, path: "" };
  if (kind === "endpoint") return { kind, baseUrl: "", model: "" };
  return { kind: "base" };
}

type Draft = Settings & { chatDefaults: GenerationSettings };

/** The fields of `draft` that differ from `base`: what one PATCH /api/settings sends. */
function changes(draft: Draft | null, base: Draft | null): Partial<Draft> {
  if (!draft || !base) return {};
  return Object.fromEntries(Object.entries(draft).filter(([k, v]) => JSON.stringify(base[k as keyof Draft]) !== JSON.stringify(v))) as Partial<Draft>;
}

export function SettingsPage() {
  const { client, status } = useCore();
  // One GET for the learning settings and the chat defaults: the page saves them together.
  const loaded = useLive((c) => c.getJson("/api/settings").then((b): Draft => ({ ...readSettings(b), chatDefaults: readChatDefaults(b) })), ["settings"]);
  // null until GET /api/settings answers: the defaults are the core's (its settings schema), not the page's.
  const [form, setForm] = useState<Draft | null>(null);
  // What the core holds as far as this page knows: the last load, or what the last save sent.
  const [base, setBase] = useState<Draft | null>(null);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [showToken, setShowToken] = useState(false);
  const [modelId, setModelId] = useState<string>("model");

  const changed = changes(form, base);
  const dirty = Object.keys(changed).length > 0;
  const dirtyRef = useRef(dirty);
  dirtyRef.current = dirty;
  useUnsavedChanges(dirty);

  // A fresh load replaces the form unless the user is editing it (then it waits for Save or Discard).
  const loadedJson = loaded.data ? JSON.stringify(loaded.data) : null;
  useEffect(() => {
    if (!loaded.data || dirtyRef.current) return;
    setForm(loaded.data);
    setBase(loaded.data);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- by value
  }, [loadedJson]);
  useEffect(() => {
    servedModelId(client).then(setModelId, () => undefined);
  }, [client]);

  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => {
    setForm((f) => (f ? { ...f, [k]: v } : f));
    setSaved(false);
  };

  const save = async () => {
    if (!form || !dirty || saving) return;
    setSaving(true);
    setError(null);
    try {
      await client.patch("/api/settings", changed);
      setBase(form);
      setSaved(true);
      loaded.reload();
    } catch (e) {
      setError(e instanceof ApiError && e.notAvailable ? `Saving settings is not offered by ${engineName}.` : `Could not save the settings: ${messageOf(e)}`);
    } finally {
      setSaving(false);
    }
  };

  const token = client.token ?? "";
  const apiBase = client.config.apiBase;
  const snippet = openClawSnippet(apiBase, token, modelId, status?.model?.contextSize ?? 32768);
  const unavailable = loaded.error instanceof ApiError && loaded.error.notAvailable;

  return (
    <div className="page">
      <header className="page-head">
        <h1>Settings</h1>
      </header>
      {loaded.error && <LoadProblem error={loaded.error} what="Settings" onRetry={loaded.reload} />}
      {!form && !loaded.error && (
        <p className="muted" role="status">
          Loading settings…
        </p>
      )}
      {form && (
        <form
          className="settings"
          aria-label="Settings"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <fieldset disabled={unavailable}>
            <legend>Learning</legend>
            <label className="span-2">
              <TermText t={terms.learningMethod} />
              <select value={form.learningMethod} onChange={(e) => set("learningMethod", e.target.value as Settings["learningMethod"])}>
                <option value="combined">From your ratings and your hints (combined)</option>
                <option value="binary">From your ratings only (binary RL)</option>
                <option value="opd">From your hints only (OPD)</option>
                <option value="topk">From your hints, top choices only (OPD top-k, advanced)</option>
              </select>
            </label>
            <label>
              <TermText t={terms.batchSize} value={form.batchSize} />
              <input type="number" min={1} max={1024} value={form.batchSize} onChange={(e) => set("batchSize", Number(e.target.value))} />
            </label>
            <label>
              <TermText t={terms.learningRate} value={form.learningRate} />
              <input type="number" step="any" min={0} value={form.learningRate} onChange={(e) => set("learningRate", Number(e.target.value))} />
            </label>
            <label title="Higher lets each lesson change more of the assistant, and uses more memory while learning.">
              <TermText t={terms.loraRank} value={form.loraRank} />
              <input type="number" min={1} max={256} value={form.loraRank} onChange={(e) => set("loraRank", Number(e.target.value))} />
            </label>
            <label title="How strongly training is pulled back toward the model it started from (the KL to the base model in the loss). 0 turns the anchor off.">
              <TermText t={terms.klBeta} value={form.klBeta} />
              <input type="number" step="any" min={0} max={10} value={form.klBeta} onChange={(e) => set("klBeta", Number(e.target.value))} />
            </label>
            <label title="Conversations never trained on: each new version is checked on them before it is used, and after.">
              <TermText t={terms.heldBackShare} />
              <input
                type="number"
                step="any"
                min={0}
                max={50}
                value={Math.round(form.heldBackShare * 1000) / 10}
                onChange={(e) => set("heldBackShare", Number(e.target.value) / 100)}
              />
            </label>
            <label className="span-2">
              <TermText t={terms.teacherSource} />
              <select value={form.teacherSource} onChange={(e) => set("teacherSource", e.target.value as Settings["teacherSource"])}>
                <option value="policy">The learning model, given your hint</option>
                <option value="base">The original model, given your hint (steadier)</option>
              </select>
            </label>
            <label className="check">
              <input type="checkbox" checked={form.autoLearn} onChange={(e) => set("autoLearn", e.target.checked)} />
              {terms.autoLearn.label}
            </label>
          </fieldset>
          <fieldset disabled={unavailable}>
            <legend>Judge</legend>
            <label>
              <TermText t={terms.judgeVotes} value={form.judgeVotes} />
              <input type="number" min={1} max={15} value={form.judgeVotes} onChange={(e) => set("judgeVotes", Number(e.target.value))} />
            </label>
            <label className="span-2">
              <TermText t={terms.judgeSource} />
              <select value={form.judgeSource.kind} onChange={(e) => set("judgeSource", emptyJudge(e.target.value as JudgeSource["kind"]))}>
                <option value="base">The model you chat with, as originally downloaded</option>
                <option value="gguf">Another model file on this computer (GGUF)</option>
                <option value="endpoint">A server with an OpenAI-compatible API</option>
              </select>
            </label>
            {form.judgeSource.kind === "gguf" && (
              <label>
                Judge model file
                <input value={form.judgeSource.path} placeholder="/path/to/judge.gguf" onChange={(e) => set("judgeSource", { kind: "gguf", path: e.target.value })} />
              </label>
            )}
            {form.judgeSource.kind === "endpoint" && (
              <>
                <label>
                  Judge server address
                  <input value={form.judgeSource.baseUrl} placeholder="http://127.0.0.1:8000/v1" onChange={(e) => set("judgeSource", { ...(form.judgeSource as Extract<JudgeSource, { kind: "endpoint" }>), baseUrl: e.target.value })} />
                </label>
                <label>
                  Judge model
                  <input value={form.judgeSource.model} onChange={(e) => set("judgeSource", { ...(form.judgeSource as Extract<JudgeSource, { kind: "endpoint" }>), model: e.target.value })} />
                </label>
                <label>
                  Judge API key
                  <input type="password" value={form.judgeSource.apiKey ?? ""} onChange={(e) => set("judgeSource", { ...(form.judgeSource as Extract<JudgeSource, { kind: "endpoint" }>), apiKey: e.target.value || undefined })} />
                </label>
              </>
            )}
          </fieldset>
          <fieldset disabled={unavailable}>
            <legend>Other apps</legend>
            <label className="span-2">
              <TermText t={terms.outsideTurnType} />
              <select value={form.outsideDefaultTurnType} onChange={(e) => set("outsideDefaultTurnType", e.target.value as Settings["outsideDefaultTurnType"])}>
                <option value="side">Don't learn from them (side)</option>
                <option value="main">Learn from them (main)</option>
              </select>
            </label>
            <label className="check" title={terms.headerless.term}>
              <input type="checkbox" checked={form.headerlessTurnsMain} onChange={(e) => set("headerlessTurnsMain", e.target.checked)} />
              {terms.headerless.label} (OpenClaw without its plugin, any OpenAI SDK)
            </label>
          </fieldset>

          <ChatDefaultsSection value={form.chatDefaults} onChange={(g) => set("chatDefaults", g)} contextSize={status?.model?.contextSize ?? null} />

          {error && <ErrorNote error={error} />}
          <div className="actions settings-save">
            {/* aria-disabled, not disabled, while there is nothing to save: the button keeps keyboard focus after a save. */}
            <button type="submit" className="primary" disabled={unavailable} aria-disabled={!dirty || saving}>
              {saving ? "Saving…" : "Save settings"}
            </button>
            {dirty ? (
              <span className="muted small">Unsaved changes</span>
            ) : saved ? (
              <span className="muted" role="status">
                Saved.
              </span>
            ) : null}
          </div>
        </form>
      )}

      <MachineCheck />

      <h2>API access</h2>
      <div className="kv">
        <span>API address</span>
        <code>{apiBase}/v1</code>
        <CopyButton text={`${apiBase}/v1`} label="Copy API address" />
        <span>Token</span>
        <code>{showToken ? token : "•".repeat(Math.min(token.length, 24))}</code>
        <span>
          <button type="button" onClick={() => setShowToken((s) => !s)}>
            {showToken ? "Hide token" : "Show token"}
          </button>{" "}
          <CopyButton text={token} label="Copy token" />
        </span>
      </div>
      <h3>OpenClaw provider snippet</h3>
      <p className="muted small">Put this in openclaw.json (the file OPENCLAW_CONFIG_PATH names).</p>
      <div className="code-block">
        <div className="code-head">
          <span>openclaw.json</span>
          <CopyButton text={snippet} label="Copy OpenClaw snippet" />
        </div>
        <pre aria-label="OpenClaw snippet">{showToken ? snippet : snippet.replace(JSON.stringify(token), '"<token: Show token to see it>"')}</pre>
      </div>
    </div>
  );
}
