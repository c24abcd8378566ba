import { useState } from "react";
import type { PreferencesReply } from "../../../electron/core/api/preferences.js";
import { messageOf } from "../api/client.js";
import { useCore, useLive } from "../api/core.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { PreferenceItem, type PreferenceAction } from "./preferences/PreferenceItem.js";
import { PreferenceSettings } from "./preferences/PreferenceSettings.js";

import "./preferences.css";

/**
 * Standing preferences: every hint becomes one and applies from the next message (it is added to
 * the system prompt), the learner distils it into the adapter, and once the adapter alone answers
 * as with it, it is marked learned and leaves the prompt. Every change can be undone.
 */
export function PreferencesPage() {
  const { client } = useCore();
  const list = useLive((c) => c.get<PreferencesReply>("/api/preferences"), ["preferences", "settings", "swap"]);
  const [draft, setDraft] = useState("");
  const [editing, setEditing] = useState<{ id: string; text: string } | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [checking, setChecking] = useState(false);

  const act: PreferenceAction = async (what, fn, done) => {
    setError(null);
    setNote(null);
    try {
      await fn();
      if (done) setNote(done);
      list.reload();
    } catch (e) {
      setError(`${what}: ${messageOf(e)}`);
    }
  };

  const data = list.data;
  const items = data?.preferences ?? [];
  return (
    <div className="page preferences-page">
      <header className="page-head">
        <h1>Preferences</h1>
        <span className="muted">
          {data
            ? data.block.enabled
              ? `In the prompt now: ${data.block.ids.length} of ${items.filter((p) => p.status === "active").length} active${data.block.tokens !== null ? ` · ${data.block.tokens} of ${data.block.budget} tokens` : ""}${data.block.outsideClients ? "" : " · app chat only"}`
              : "Preferences are off (Settings)"
            : ""}
        </span>
        <button
          type="button"
          disabled={checking}
          title="Check, on conversations kept aside from training (held-back turns), whether the assistant has learned each preference"
          onClick={() => {
            setChecking(true);
            void act("Check", () => client.post("/api/preferences/check"), "Checked against the served adapter.").finally(() => setChecking(false));
          }}
        >
          {checking ? "Checking…" : "Check learned"}
        </button>
      </header>
      <p className="muted small">
        Each hint you give becomes a preference and applies from your next message: it is added to the system prompt. The learner trains it into the adapter;
        once the adapter alone answers as it does with the preference, it is marked learned and leaves the prompt (it comes back if forgotten).
      </p>
      <form
        className="pref-add"
        onSubmit={(e) => {
          e.preventDefault();
          const text = draft.trim();
          if (!text) return;
          void act("Add", () => client.post("/api/preferences", { text }), "Added. It applies from your next message.").then(() => setDraft(""));
        }}
      >
        <input
          aria-label="New preference"
          placeholder="Add a preference, e.g. “Answer in French.”"
          value={draft}
          maxLength={500}
          onChange={(e) => setDraft(e.target.value)}
        />
        <button type="submit" className="primary" disabled={!draft.trim()}>
          Add
        </button>
      </form>
      {note && (
        <div className="note note-ok" role="status">
          {note}
        </div>
      )}
      {error && <ErrorNote error={error} />}
      {list.error && <LoadProblem error={list.error} what="Preferences" onRetry={list.reload} />}
      {data && items.length === 0 && <p className="muted">No preferences yet. Add a hint to an answer in Chat, or add one here.</p>}
      {items.length > 0 && (
        <ul className="pref-list">
          {[...items].reverse().map((p) => (
            <PreferenceItem
              key={p.id}
              p={p}
              editing={editing?.id === p.id ? editing.text : null}
              onEdit={(text) => setEditing(text === null ? null : { id: p.id, text })}
              act={act}
            />
          ))}
        </ul>
      )}
      {data && <PreferenceSettings block={data.block} fromJudge={data.fromJudge !== false} onSaved={list.reload} />}
      {data && data.deleted.length > 0 && (
        <details className="pref-deleted">
          <summary>Deleted ({data.deleted.length})</summary>
          <ul>
            {[...data.deleted].reverse().map((p) => (
              <li key={p.id}>
                <span>{p.text}</span>{" "}
                <button type="button" onClick={() => void act("Restore", () => client.post(`/api/preferences/${p.id}/restore`), "Restored.")}>
                  Restore
                </button>
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
