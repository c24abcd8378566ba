import { useState } from "react";
import type { PreferencesReply, PreferenceView } from "../../../electron/core/api/preferences.js";
import { messageOf } from "../api/client.js";
import { useCore, useLive } from "../api/core.js";
import { preferenceCheckWords } from "../components/terms.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { fmtTime } from "../components/format.js";

import "./preferences.css";

const at = (iso: string) => fmtTime(Date.parse(iso));

/** The nav icon: a list with a star (standing instructions). */
export const PreferencesIcon = () => (
  <svg width={18} height={18} viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth={1.8} strokeLinecap="round" strokeLinejoin="round" aria-hidden="true" focusable="false">
    <path d="M4 6h9M4 12h7M4 18h9" />
    <path d="M18 9l1.2 2.5 2.8.4-2 1.9.5 2.7-2.5-1.3-2.5 1.3.5-2.7-2-1.9 2.8-.4z" />
  </svg>
);

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

  const act = async (what: string, fn: () => Promise<unknown>, done?: string) => {
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
        <input aria-label="New preference" placeholder="Add a preference, e.g. “Answer in French.”" value={draft} maxLength={500} onChange={(e) => setDraft(e.target.value)} />
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
            <li key={p.id} className={`pref pref-${p.status}`} aria-label={`Preference: ${p.text}`}>
              {editing?.id === p.id ? (
                <form
                  className="pref-edit"
                  onSubmit={(e) => {
                    e.preventDefault();
                    const text = editing.text.trim();
                    if (text) void act("Edit", () => client.patch(`/api/preferences/${p.id}`, { text }), "Saved. It applies from your next message.").then(() => setEditing(null));
                  }}
                >
                  <textarea aria-label="Preference text" value={editing.text} maxLength={500} rows={2} onChange={(e) => setEditing({ id: p.id, text: e.target.value })} autoFocus />
                  <div className="row-actions">
                    <button type="submit" className="primary" disabled={!editing.text.trim()}>
                      Save
                    </button>
                    <button type="button" onClick={() => setEditing(null)}>
                      Cancel
                    </button>
                  </div>
                </form>
              ) : (
                <div className="pref-text">{p.text}</div>
              )}
              <div className="pref-meta small">
                <StatusTag p={p} /> <span className="muted">{sourceLabel(p)}</span>
                <span className="muted"> · {p.contextTokens !== null ? `${p.contextTokens} tokens of context${p.status === "active" ? "" : " when active"}` : "context cost unknown (no model)"}</span>
                <span className="muted"> · added {at(p.createdAt)}</span>
                {p.lastCheck && (
                  <span className="muted" title={`${preferenceCheckWords(p.lastCheck).detail}; measured with ${p.lastCheck.adapter} at ${at(p.lastCheck.at)}`}>
                    {" "}
                    · {preferenceCheckWords(p.lastCheck).text}
                  </span>
                )}
              </div>
              {p.turnIds.length > 0 && (
                <div className="small muted pref-turns">
                  From {p.turnIds.length === 1 ? "turn" : "turns"}{" "}
                  {p.turnIds.map((t, i) => (
                    <span key={t}>
                      {i > 0 && ", "}
                      <code title={t}>{t.slice(0, 8)}</code>
                    </span>
                  ))}
                </div>
              )}
              <LastChange p={p} />
              <div className="row-actions">
                <button type="button" onClick={() => setEditing({ id: p.id, text: p.text })}>
                  Edit
                </button>
                {p.status === "disabled" ? (
                  <button type="button" onClick={() => void act("Enable", () => client.patch(`/api/preferences/${p.id}`, { status: "active" }), "Enabled. It applies from your next message.")}>
                    Enable
                  </button>
                ) : (
                  <button type="button" onClick={() => void act("Disable", () => client.patch(`/api/preferences/${p.id}`, { status: "disabled" }), "Disabled. Your next message no longer carries it.")}>
                    Disable
                  </button>
                )}
                {p.status === "learned" && (
                  <button type="button" title="Put it back in the prompt" onClick={() => void act("Back in prompt", () => client.patch(`/api/preferences/${p.id}`, { status: "active" }), "Back in the prompt from your next message.")}>
                    Back in prompt
                  </button>
                )}
                {p.history.some((h) => h.kind === "text" || h.kind === "status") && (
                  <button type="button" onClick={() => void act("Undo", () => client.post(`/api/preferences/${p.id}/undo`), "Undone.")}>
                    Undo
                  </button>
                )}
                <button type="button" onClick={() => void act("Delete", () => client.del(`/api/preferences/${p.id}`), "Deleted. Restore it below if that was a mistake.")}>
                  Delete
                </button>
              </div>
            </li>
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

function StatusTag({ p }: { p: PreferenceView }) {
  if (p.status === "learned") return <span className="tag tag-ok">learned · not in prompt</span>;
  if (p.status === "disabled") return <span className="tag">disabled</span>;
  if (p.overBudget) return <span className="tag tag-warn" title="The preference budget is spent on newer ones">active · over budget</span>;
  return <span className="tag tag-active">active · in prompt</span>;
}

function sourceLabel(p: PreferenceView): string {
  return p.source === "user" ? "from your hint" : p.source === "judge" ? "from the judge" : "added by hand";
}

/** The latest status change, with who made it and why (the learner's retirement says how it measured). */
function LastChange({ p }: { p: PreferenceView }) {
  const last = [...p.history].reverse().find((h) => h.kind === "status" || h.kind === "text");
  if (!last) return null;
  const who = last.by === "loop" ? "The learner" : "You";
  const what = last.kind === "text" ? "edited it" : `changed it from ${last.from} to ${last.to}`;
  return (
    <div className="small muted pref-change">
      {who} {what} {at(last.at)}
      {last.reason && last.reason !== "undo" ? ` (${last.reason})` : last.reason === "undo" ? " (undo)" : ""}
    </div>
  );
}

/** The preference settings (PATCH /api/settings), here where their effect shows. */
function PreferenceSettings({ block, fromJudge, onSaved }: { block: PreferencesReply["block"]; fromJudge: boolean; onSaved(): void }) {
  const { client } = useCore();
  const [error, setError] = useState<string | null>(null);
  const [budget, setBudget] = useState(String(block.budget));
  const save = async (patch: Record<string, unknown>) => {
    try {
      await client.patch("/api/settings", patch);
      setError(null);
      onSaved();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <details className="pref-settings">
      <summary>Settings</summary>
      <label>
        <input type="checkbox" checked={block.enabled} onChange={(e) => void save({ preferencesInPrompt: e.target.checked })} /> Add active preferences to the prompt
      </label>
      <label>
        <input type="checkbox" checked={block.outsideClients} disabled={!block.enabled} onChange={(e) => void save({ preferencesForOutsideClients: e.target.checked })} /> Also for outside clients (OpenClaw, SDKs), not only this app's chat
      </label>
      <label>
        <input type="checkbox" checked={fromJudge} onChange={(e) => void save({ preferencesFromJudge: e.target.checked })} /> Make a preference of a hint the judge reads from your replies when it comes back on another turn
      </label>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save({ preferenceTokenBudget: Number(budget) });
        }}
      >
        <label>
          Token budget{" "}
          <input type="number" min={16} max={4096} value={budget} onChange={(e) => setBudget(e.target.value)} aria-label="Token budget" />
        </label>{" "}
        <button type="submit" disabled={Number(budget) === block.budget}>
          Save
        </button>
      </form>
      {error && <ErrorNote error={error} />}
    </details>
  );
}
