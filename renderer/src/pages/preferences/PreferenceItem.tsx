import type { PreferenceView } from "../../../../electron/core/api/preferences.js";
import { useCore } from "../../api/core.js";
import { preferenceCheckWords } from "../../components/terms.js";
import { fmtTime } from "../../components/format.js";

const at = (iso: string) => fmtTime(Date.parse(iso));

/** Runs one change to the preferences: `what` names it in an error, `done` is the note shown after it. */
export type PreferenceAction = (what: string, fn: () => Promise<unknown>, done?: string) => Promise<void>;

/**
 * One preference: its text (or the edit form while `editing` holds the text being edited), its
 * status, source, context cost, last check and last change, and its actions.
 */
export function PreferenceItem({
  p,
  editing,
  onEdit,
  act,
}: {
  p: PreferenceView;
  editing: string | null;
  onEdit: (text: string | null) => void;
  act: PreferenceAction;
}) {
  const { client } = useCore();
  return (
    <li className={`pref pref-${p.status}`} aria-label={`Preference: ${p.text}`}>
      {editing !== null ? (
        <form
          className="pref-edit"
          onSubmit={(e) => {
            e.preventDefault();
            const text = editing.trim();
            if (text)
              void act("Edit", () => client.patch(`/api/preferences/${p.id}`, { text }), "Saved. It applies from your next message.").then(() => onEdit(null));
          }}
        >
          <textarea aria-label="Preference text" value={editing} maxLength={500} rows={2} onChange={(e) => onEdit(e.target.value)} autoFocus />
          <div className="row-actions">
            <button type="submit" className="primary" disabled={!editing.trim()}>
              Save
            </button>
            <button type="button" onClick={() => onEdit(null)}>
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <div className="pref-text">{p.text}</div>
      )}
      <div className="pref-meta small">
        <StatusTag p={p} /> <span className="muted">{sourceLabel(p)}</span>
        <span className="muted">
          {" "}
          ·{" "}
          {p.contextTokens !== null ? `${p.contextTokens} tokens of context${p.status === "active" ? "" : " when active"}` : "context cost unknown (no model)"}
        </span>
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
        <button type="button" onClick={() => onEdit(p.text)}>
          Edit
        </button>
        {p.status === "disabled" ? (
          <button
            type="button"
            onClick={() =>
              void act("Enable", () => client.patch(`/api/preferences/${p.id}`, { status: "active" }), "Enabled. It applies from your next message.")
            }
          >
            Enable
          </button>
        ) : (
          <button
            type="button"
            onClick={() =>
              void act("Disable", () => client.patch(`/api/preferences/${p.id}`, { status: "disabled" }), "Disabled. Your next message no longer carries it.")
            }
          >
            Disable
          </button>
        )}
        {p.status === "learned" && (
          <button
            type="button"
            title="Put it back in the prompt"
            onClick={() =>
              void act("Back in prompt", () => client.patch(`/api/preferences/${p.id}`, { status: "active" }), "Back in the prompt from your next message.")
            }
          >
            Back in prompt
          </button>
        )}
        {p.history.some((h) => h.kind === "text" || h.kind === "status") && (
          <button type="button" onClick={() => void act("Undo", () => client.post(`/api/preferences/${p.id}/undo`), "Undone.")}>
            Undo
          </button>
        )}
        <button
          type="button"
          onClick={() => void act("Delete", () => client.del(`/api/preferences/${p.id}`), "Deleted. Restore it below if that was a mistake.")}
        >
          Delete
        </button>
      </div>
    </li>
  );
}

function StatusTag({ p }: { p: PreferenceView }) {
  if (p.status === "learned") return <span className="tag tag-ok">learned · not in prompt</span>;
  if (p.status === "disabled") return <span className="tag">disabled</span>;
  if (p.overBudget)
    return (
      <span className="tag tag-warn" title="The preference budget is spent on newer ones">
        active · over budget
      </span>
    );
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
