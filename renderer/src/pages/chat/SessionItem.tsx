import { useEffect, useRef, useState } from "react";
import { useCore } from "../../api/core.js";
import { humanError } from "../../api/humanError.js";
import type { SessionView } from "../../../../electron/core/api/sessions.js";
import { PencilIcon, TrashIcon } from "../../components/Icons.js";
import { fmtTime } from "../../components/format.js";
import { epochOf } from "../../format/time.js";
import { titleOf } from "../../format/sessions.js";

/** One chat in the sidebar: opens it, renames it in place, deletes it (after asking). */
export function SessionItem({
  session,
  active,
  onOpen,
  onChanged,
  onDeleted,
}: {
  session: SessionView;
  active: boolean;
  onOpen: () => void;
  onChanged: () => void;
  onDeleted: () => void;
}) {
  const { client } = useCore();
  const [renaming, setRenaming] = useState(false);
  const [title, setTitle] = useState(session.title ?? "");
  const [error, setError] = useState<string | null>(null);
  const path = `/api/sessions/${encodeURIComponent(session.id)}`;
  // Keyboard: when the rename box closes (saved or Esc), the focus goes to the chat's button.
  const openButton = useRef<HTMLButtonElement | null>(null);
  const refocus = useRef(false);
  useEffect(() => {
    if (!refocus.current || renaming) return;
    refocus.current = false;
    openButton.current?.focus();
  }, [renaming]);
  const closeRename = () => {
    refocus.current = true;
    setRenaming(false);
  };

  const save = async () => {
    try {
      await client.patch(path, { title: title.trim() });
      closeRename();
      setError(null);
      onChanged();
    } catch (e) {
      setError(humanError(e, "This chat is no longer in the history (it may have been deleted)."));
    }
  };
  const remove = async () => {
    if (!window.confirm(`Delete the chat "${titleOf(session)}"? This cannot be undone.`)) return;
    try {
      await client.del(path);
      onDeleted();
      onChanged();
    } catch (e) {
      setError(humanError(e, "This chat is no longer in the history (it may have been deleted)."));
    }
  };

  return (
    <li className={active ? "session active" : "session"}>
      {renaming ? (
        <form
          className="rename"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <input
            aria-label="Chat title"
            value={title}
            autoFocus
            onChange={(e) => setTitle(e.target.value)}
            onKeyDown={(e) => e.key === "Escape" && closeRename()}
          />
          <button type="submit">Save</button>
        </form>
      ) : (
        <>
          <button type="button" className="session-open" ref={openButton} onClick={onOpen} aria-current={active ? "true" : undefined}>
            <span className="session-title">{titleOf(session)}</span>
            <span className="session-time">
              {fmtTime(epochOf(session.lastActivityAt))}
              {session.source === "outside" && (
                <span className="tag" title="A conversation from an outside client (OpenClaw, an OpenAI SDK)">
                  API
                </span>
              )}
            </span>
          </button>
          <span className="session-actions">
            <button type="button" className="icon" aria-label={`Rename ${titleOf(session)}`} title="Rename" onClick={() => setRenaming(true)}>
              <PencilIcon />
            </button>
            <button type="button" className="icon" aria-label={`Delete ${titleOf(session)}`} title="Delete" onClick={() => void remove()}>
              <TrashIcon />
            </button>
          </span>
        </>
      )}
      {error && <div className="small error-text">{error}</div>}
    </li>
  );
}
