import { useEffect, useState } from "react";
import { ApiError, messageOf } from "../api/client.js";
import { servedModelId } from "../api/chat.js";
import { useCore, useLive } from "../api/core.js";
import { readSettings, type JudgeSource, type Settings } from "../api/shapes.js";
import { CopyButton } from "../components/Markdown.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { ChatDefaultsSection } from "./ChatDefaultsSection.js";

/** The provider config OpenClaw needs, exactly in the shape docs/openclaw-client.md shows. */
export function openClawSnippet(apiBase: string, token: string, modelId: string, contextWindow: number): string {
  const config = {
    models: {
      providers: {
        clawrl: {
          baseUrl: `${apiBase}/v1`,
          apiKey: token,
          api: "openai-completions",
          models: [
            {
              id: modelId,
              name: modelId,
              reasoning: false,
              input: ["text"],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow,
              maxTokens: 1024,
            },
          ],
        },
      },
    },
    agents: { defaults: { model: { primary: `clawrl/${modelId}` } } },
  };
  return JSON.stringify(config, null, 2);
}

function emptyJudge(kind: JudgeSource["kind"]): JudgeSource {
  if (kind === "gguf") return { kind, path: "" };
  if (kind === "endpoint") return { kind, baseUrl: "", model: "" };
  return { kind: "base" };
}

export function SettingsPage() {
  const { client, status } = useCore();
  const loaded = useLive((c) => c.get<unknown>("/api/settings").then(readSettings), ["settings"]);
  // null until GET /api/settings answers: the defaults are the core's (its settings schema), not the page's.
  const [form, setForm] = useState<Settings | null>(null);
  const [dirty, setDirty] = useState(false);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [showToken, setShowToken] = useState(false);
  const [modelId, setModelId] = useState<string>("model");

  useEffect(() => {
    if (loaded.data && !dirty) setForm(loaded.data);
  }, [loaded.data, dirty]);
  useEffect(() => {
    servedModelId(client).then(setModelId, () => undefined);
  }, [client]);

  const set = <K extends keyof Settings>(k: K, v: Settings[K]) => {
    setForm((f) => (f ? { ...f, [k]: v } : f));
    setDirty(true);
    setSaved(false);
  };

  const save = async () => {
    const base = loaded.data;
    if (!form || !base) return;
    setSaving(true);
    setError(null);
    const changed = Object.fromEntries(Object.entries(form).filter(([k, v]) => JSON.stringify(base[k as keyof Settings]) !== JSON.stringify(v)));
    try {
      await client.patch("/api/settings", changed);
      setDirty(false);
      setSaved(true);
      loaded.reload();
    } catch (e) {
      setError(e instanceof ApiError && e.notAvailable ? "Saving settings is not offered by this core." : messageOf(e));
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
          onSubmit={(e) => {
            e.preventDefault();
            if (dirty && !saving) void save();
          }}
        >
          <fieldset disabled={unavailable}>
            <legend>Learning</legend>
            <label>
              Learning method
              <select value={form.learningMethod} onChange={(e) => set("learningMethod", e.target.value as Settings["learningMethod"])}>
                <option value="combined">Combined (rewards + hints)</option>
                <option value="binary">Binary RL (rewards only)</option>
                <option value="opd">OPD (hints only)</option>
                <option value="topk">OPD top-k select (advanced)</option>
              </select>
            </label>
            <label>
              Batch size
              <input type="number" min={1} max={1024} value={form.batchSize} onChange={(e) => set("batchSize", Number(e.target.value))} />
            </label>
            <label>
              Learning rate
              <input type="number" step="any" min={0} value={form.learningRate} onChange={(e) => set("learningRate", Number(e.target.value))} />
            </label>
            <label>
              LoRA rank
              <input type="number" min={1} max={256} value={form.loraRank} onChange={(e) => set("loraRank", Number(e.target.value))} />
            </label>
            <label title="How strongly training is pulled back toward the model it started from (the KL to the base model in the loss). 0 turns the anchor off.">
              Anchor to the base model (β)
              <input type="number" step="any" min={0} max={10} value={form.klBeta} onChange={(e) => set("klBeta", Number(e.target.value))} />
            </label>
            <label title="Turns never trained on: the publish gate and the watch on the served adapter check new adapters on them.">
              Held back from training (%)
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
              Hint teacher (OPD)
              <select value={form.teacherSource} onChange={(e) => set("teacherSource", e.target.value as Settings["teacherSource"])}>
                <option value="policy">The learning model, with the hint</option>
                <option value="base">The base model, with the hint (steadier)</option>
              </select>
            </label>
            <label className="check">
              <input type="checkbox" checked={form.autoLearn} onChange={(e) => set("autoLearn", e.target.checked)} />
              Learn automatically when a batch of samples is ready
            </label>
          </fieldset>
          <fieldset disabled={unavailable}>
            <legend>Judge</legend>
            <label>
              Judge votes
              <input type="number" min={1} max={15} value={form.judgeVotes} onChange={(e) => set("judgeVotes", Number(e.target.value))} />
            </label>
            <label className="span-2">
              Judge source
              <select value={form.judgeSource.kind} onChange={(e) => set("judgeSource", emptyJudge(e.target.value as JudgeSource["kind"]))}>
                <option value="base">The served model, without adapter</option>
                <option value="gguf">Another local GGUF</option>
                <option value="endpoint">An OpenAI-compatible endpoint</option>
              </select>
            </label>
            {form.judgeSource.kind === "gguf" && (
              <label>
                Judge GGUF file
                <input value={form.judgeSource.path} placeholder="/path/to/judge.gguf" onChange={(e) => set("judgeSource", { kind: "gguf", path: e.target.value })} />
              </label>
            )}
            {form.judgeSource.kind === "endpoint" && (
              <>
                <label>
                  Judge base URL
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
            <legend>Outside clients</legend>
            <label>
              Turn type when a client sends a session but no turn type
              <select value={form.outsideDefaultTurnType} onChange={(e) => set("outsideDefaultTurnType", e.target.value as Settings["outsideDefaultTurnType"])}>
                <option value="side">side (not trained)</option>
                <option value="main">main (trained)</option>
              </select>
            </label>
            <label className="check">
              <input type="checkbox" checked={form.headerlessTurnsMain} onChange={(e) => set("headerlessTurnsMain", e.target.checked)} />
              Learn from clients that send no session headers (OpenClaw without its plugin, any OpenAI SDK)
            </label>
          </fieldset>
          {error && <ErrorNote error={error} />}
          <div className="actions">
            {/* aria-disabled, not disabled, while there is nothing to save: the button keeps keyboard focus after a save. */}
            <button type="submit" className="primary" disabled={unavailable} aria-disabled={!dirty || saving}>
              {saving ? "Saving…" : "Save settings"}
            </button>
            {saved && <span className="muted" role="status">Saved.</span>}
          </div>
        </form>
      )}

      <ChatDefaultsSection />

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
