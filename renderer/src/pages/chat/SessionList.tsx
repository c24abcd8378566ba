import { useMemo, useState } from "react";
import type { Live } from "../../api/core.js";
import type { SessionView } from "../../../../electron/core/api/sessions.js";
import { LoadProblem } from "../../components/Notices.js";
import { SidebarIcon } from "../../components/Icons.js";
import { SessionItem } from "./SessionItem.js";
import { titleOf } from "../../format/sessions.js";

/** The chats sidebar: New chat, search by title, and the chats (each opens, renames, deletes). */
export function SessionList({
  sessions,
  activeId,
  onNew,
  onClose,
  onOpen,
  onDeleted,
}: {
  sessions: Live<SessionView[]>;
  activeId: string | null;
  onNew: () => void;
  onClose: () => void;
  onOpen: (id: string) => void;
  onDeleted: (id: string) => void;
}) {
  const [search, setSearch] = useState("");
  const shownSessions = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (sessions.data ?? []).filter((s) => !q || titleOf(s).toLowerCase().includes(q));
  }, [search, sessions.data]);

  return (
    <aside className="sessions" id="chat-sessions" aria-label="Chats">
      <div className="sessions-head">
        <button type="button" className="primary wide" onClick={onNew}>
          New chat
        </button>
        <button type="button" className="icon sessions-close" aria-label="Close chats" title="Close chats (Esc)" onClick={onClose}>
          <SidebarIcon />
        </button>
      </div>
      <input type="search" placeholder="Search chats" aria-label="Search chats" value={search} onChange={(e) => setSearch(e.target.value)} />
      {sessions.error && <LoadProblem error={sessions.error} what="The chat history" onRetry={sessions.reload} />}
      <ul className="session-list">
        {shownSessions.map((s) => (
          <SessionItem
            key={s.id}
            session={s}
            active={s.id === activeId}
            onOpen={() => onOpen(s.id)}
            onChanged={sessions.reload}
            onDeleted={() => onDeleted(s.id)}
          />
        ))}
        {sessions.data && shownSessions.length === 0 && <li className="muted small">{search ? "No chat matches." : "No chats yet."}</li>}
      </ul>
    </aside>
  );
}
