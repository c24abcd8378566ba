import { useMemo, useState } from "react";
import type { Live } from "../../api/core.js";
import type { SessionSearchHit, SessionView } from "../../../../electron/core/api/sessions.js";
import { LoadProblem } from "../../components/Notices.js";
import { SidebarIcon } from "../../components/Icons.js";
import { SessionItem } from "./SessionItem.js";
import { titleOf } from "../../format/sessions.js";
import { useMessageSearch } from "./useMessageSearch.js";

/** The chats sidebar: New chat, search (titles and messages), and the chats (each opens, renames, deletes). */
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
  /** opens a chat; `turnId`: the turn a search found, brought into view */
  onOpen: (id: string, turnId?: string | null) => void;
  onDeleted: (id: string) => void;
}) {
  const [search, setSearch] = useState("");
  const shownSessions = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (sessions.data ?? []).filter((s) => !q || titleOf(s).toLowerCase().includes(q));
  }, [search, sessions.data]);
  const found = useMessageSearch(search);
  const messageHits = (found.hits ?? []).filter((h) => h.turnId !== null);

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
      <input type="search" placeholder="Search chats and messages" aria-label="Search chats" value={search} onChange={(e) => setSearch(e.target.value)} />
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
        {sessions.data && shownSessions.length === 0 && messageHits.length === 0 && (
          <li className="muted small">{search ? (found.hits === null && !found.error ? "Searching…" : "No chat matches.") : "No chats yet."}</li>
        )}
      </ul>
      {messageHits.length > 0 && <SearchHits hits={messageHits} titles={sessions.data ?? []} onOpen={onOpen} />}
    </aside>
  );
}

/** Messages that hold the search's words: each opens its chat at that turn. */
function SearchHits({ hits, titles, onOpen }: { hits: SessionSearchHit[]; titles: SessionView[]; onOpen: (id: string, turnId?: string | null) => void }) {
  const titleFor = (h: SessionSearchHit) => {
    const s = titles.find((x) => x.id === h.sessionId);
    return s ? titleOf(s) : (h.title ?? "Untitled chat");
  };
  return (
    <section className="search-hits" aria-label="Found in messages">
      <h3 className="small muted">In messages</h3>
      <ul className="session-list">
        {hits.map((h) => (
          <li key={`${h.sessionId}/${h.turnId}`} className="session">
            <button type="button" className="session-open" onClick={() => onOpen(h.sessionId, h.turnId)}>
              <span className="session-title">{titleFor(h)}</span>
              <span className="search-snippet small">{h.snippet}</span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
