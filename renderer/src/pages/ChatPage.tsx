import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import { ApiError, messageOf } from "../api/client.js";
import { streamChat, type ChatMessage } from "../api/chat.js";
import { useCore, useLive } from "../api/core.js";
import { readSession, readSessions, type SessionSummary, type Thumbs } from "../api/shapes.js";
import { Markdown, CopyButton } from "../components/Markdown.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { PencilIcon, ThumbDownIcon, ThumbUpIcon, TrashIcon } from "../components/Icons.js";
import { fmtTime } from "../components/format.js";

interface DisplayMessage {
  key: string;
  role: "user" | "assistant";
  content: string;
  turnId?: string | null;
  adapter?: string | null;
  thumbs?: Thumbs;
  hint?: string | null;
  streaming?: boolean;
  stopped?: boolean;
  error?: string;
}

let keySeq = 0;
const nextKey = () => `m${++keySeq}`;

function titleOf(s: SessionSummary): string {
  return s.title || "Untitled chat";
}

export function ChatPage() {
  const { client } = useCore();
  const sessions = useLive((c) => c.get<unknown>("/api/sessions").then(readSessions), ["session", "sessionDeleted", "turn"]);
  const [sessionId, setSessionId] = useState<string | null>(null);
  const [messages, setMessages] = useState<DisplayMessage[]>([]);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [input, setInput] = useState("");
  const [search, setSearch] = useState("");
  const [busy, setBusy] = useState(false);
  const abortRef = useRef<AbortController | null>(null);
  const listRef = useRef<HTMLDivElement | null>(null);
  const inputRef = useRef<HTMLTextAreaElement | null>(null);

  const openSession = useCallback(
    async (id: string) => {
      abortRef.current?.abort();
      setSessionId(id);
      setLoadError(null);
      setMessages([]);
      try {
        const detail = readSession(await client.get<unknown>(`/api/sessions/${encodeURIComponent(id)}`));
        const shown: DisplayMessage[] = [];
        for (const t of detail.turns.filter((t) => t.type !== "side")) {
          if (t.userText) shown.push({ key: nextKey(), role: "user", content: t.userText });
          shown.push({ key: nextKey(), role: "assistant", content: t.response, turnId: t.id, adapter: t.adapter, thumbs: t.thumbs, hint: t.hint });
        }
        setMessages(shown);
      } catch (e) {
        setLoadError(messageOf(e));
      }
    },
    [client],
  );

  const newChat = useCallback(() => {
    abortRef.current?.abort();
    setSessionId(null);
    setMessages([]);
    setLoadError(null);
    inputRef.current?.focus();
  }, []);

  // Keep the newest text in view while it streams.
  useEffect(() => {
    const el = listRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const stop = useCallback(() => abortRef.current?.abort(), []);

  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "Escape" && abortRef.current) stop();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [stop]);

  /** Streams an answer to `history` (which ends with the user's message) into a new assistant bubble. */
  const answer = useCallback(
    async (history: DisplayMessage[]) => {
      const ctrl = new AbortController();
      abortRef.current = ctrl;
      setBusy(true);
      const key = nextKey();
      setMessages([...history, { key, role: "assistant", content: "", streaming: true }]);
      const update = (fn: (m: DisplayMessage) => DisplayMessage) => setMessages((ms) => ms.map((m) => (m.key === key ? fn(m) : m)));
      let pending = "";
      let flushTimer: number | null = null;
      const flush = () => {
        flushTimer = null;
        if (!pending) return;
        const text = pending;
        pending = "";
        update((m) => ({ ...m, content: m.content + text }));
      };
      const flushNow = () => {
        if (flushTimer !== null) window.clearTimeout(flushTimer);
        flush();
      };
      const wire: ChatMessage[] = history.filter((m) => !m.error || m.content).map((m) => ({ role: m.role, content: m.content }));
      const isNew = sessionId === null;
      try {
        const { info } = await streamChat(
          client,
          wire,
          sessionId,
          {
            onStart: (info) => {
              update((m) => ({ ...m, turnId: info.turnId, adapter: info.adapter }));
              if (info.sessionId) setSessionId(info.sessionId);
            },
            onDelta: (d) => {
              // Re-rendering the markdown for every token makes long answers crawl (each render
              // parses the whole text): collect tokens and render them ~30 times a second (a timer,
              // not requestAnimationFrame, so a background tab still fills in).
              pending += d;
              if (flushTimer === null) flushTimer = window.setTimeout(flush, 33);
            },
          },
          ctrl.signal,
        );
        flushNow();
        update((m) => ({ ...m, streaming: false }));
        if (isNew && info.sessionId) {
          const first = history.find((m) => m.role === "user")?.content ?? "";
          const title = first.replace(/\s+/g, " ").trim().slice(0, 48);
          // Best effort: the sidebar shows a readable title; the core may also name sessions itself.
          if (title) await client.patch(`/api/sessions/${encodeURIComponent(info.sessionId)}`, { title }).catch(() => undefined);
        }
      } catch (e) {
        flushNow(); // a stopped or failed answer keeps what had arrived
        if (e instanceof DOMException && e.name === "AbortError") update((m) => ({ ...m, streaming: false, stopped: true }));
        else update((m) => ({ ...m, streaming: false, error: e instanceof ApiError || e instanceof Error ? e.message : messageOf(e) }));
      } finally {
        if (abortRef.current === ctrl) abortRef.current = null;
        setBusy(false);
        sessions.reload();
      }
    },
    [client, sessionId, sessions],
  );

  const send = useCallback(() => {
    const text = input.trim();
    if (!text || busy) return;
    setInput("");
    void answer([...messages, { key: nextKey(), role: "user", content: text }]);
  }, [answer, busy, input, messages]);

  const regenerate = useCallback(() => {
    if (busy) return;
    const lastUser = messages.map((m) => m.role).lastIndexOf("user");
    if (lastUser < 0) return;
    void answer(messages.slice(0, lastUser + 1));
  }, [answer, busy, messages]);

  const onComposerKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    }
  };

  const setFeedback = useCallback((key: string, patch: Partial<DisplayMessage>) => setMessages((ms) => ms.map((m) => (m.key === key ? { ...m, ...patch } : m))), []);

  const shownSessions = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (sessions.data ?? []).filter((s) => !q || titleOf(s).toLowerCase().includes(q));
  }, [search, sessions.data]);

  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant");

  return (
    <div className="chat">
      <aside className="sessions" aria-label="Chats">
        <button type="button" className="primary wide" onClick={newChat}>
          New chat
        </button>
        <input type="search" placeholder="Search chats" aria-label="Search chats" value={search} onChange={(e) => setSearch(e.target.value)} />
        {sessions.error && <LoadProblem error={sessions.error} what="The chat history" onRetry={sessions.reload} />}
        <ul className="session-list">
          {shownSessions.map((s) => (
            <SessionItem key={s.id} session={s} active={s.id === sessionId} onOpen={() => void openSession(s.id)} onChanged={sessions.reload} onDeleted={() => (s.id === sessionId ? newChat() : inputRef.current?.focus())} />
          ))}
          {sessions.data && shownSessions.length === 0 && <li className="muted small">{search ? "No chat matches." : "No chats yet."}</li>}
        </ul>
      </aside>
      <section className="conversation" aria-label="Conversation">
        <div className="messages" ref={listRef} aria-live="polite">
          {loadError && <ErrorNote error={loadError} onRetry={() => sessionId && void openSession(sessionId)} />}
          {messages.length === 0 && !loadError && (
            <div className="empty">
              <h2>What can I help with?</h2>
              <p className="muted">Answers learn from your feedback: use the thumbs and hints under each answer.</p>
            </div>
          )}
          {messages.map((m, i) =>
            m.role === "user" ? (
              <div key={m.key} className="msg user">
                <div className="bubble">{m.content}</div>
              </div>
            ) : (
              <AssistantMessage key={m.key} msg={m} isLast={i === lastAssistant} busy={busy} onRegenerate={regenerate} onFeedback={(p) => setFeedback(m.key, p)} />
            ),
          )}
        </div>
        <form
          className="composer"
          onSubmit={(e) => {
            e.preventDefault();
            send();
          }}
        >
          <textarea ref={inputRef} aria-label="Message" placeholder="Message ClawRL (Enter sends, Shift+Enter new line)" rows={1} value={input} onChange={(e) => setInput(e.target.value)} onKeyDown={onComposerKey} autoFocus />
          {busy ? (
            <button type="button" className="danger" onClick={stop} title="Stop (Esc)">
              Stop
            </button>
          ) : (
            <button type="submit" className="primary" disabled={!input.trim()}>
              Send
            </button>
          )}
        </form>
      </section>
    </div>
  );
}

function SessionItem({ session, active, onOpen, onChanged, onDeleted }: { session: SessionSummary; active: boolean; onOpen(): void; onChanged(): void; onDeleted(): void }) {
  const { client } = useCore();
  const [renaming, setRenaming] = useState(false);
  const [title, setTitle] = useState(session.title);
  const [error, setError] = useState<string | null>(null);
  const path = `/api/sessions/${encodeURIComponent(session.id)}`;
  // Keyboard: when the rename box closes (saved or Esc), the focus goes to the chat's button.
  const openButton = useRef<HTMLButtonElement | null>(null);
  const [refocus, setRefocus] = useState(false);
  useEffect(() => {
    if (!refocus || renaming) return;
    setRefocus(false);
    openButton.current?.focus();
  }, [refocus, renaming]);
  const closeRename = () => {
    setRenaming(false);
    setRefocus(true);
  };

  const save = async () => {
    try {
      await client.patch(path, { title: title.trim() });
      closeRename();
      setError(null);
      onChanged();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const remove = async () => {
    if (!window.confirm(`Delete the chat "${titleOf(session)}"? This cannot be undone.`)) return;
    try {
      await client.del(path);
      onDeleted();
      onChanged();
    } catch (e) {
      setError(messageOf(e));
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
          <input aria-label="Chat title" value={title} autoFocus onChange={(e) => setTitle(e.target.value)} onKeyDown={(e) => e.key === "Escape" && closeRename()} />
          <button type="submit">Save</button>
        </form>
      ) : (
        <>
          <button type="button" className="session-open" ref={openButton} onClick={onOpen} aria-current={active ? "true" : undefined}>
            <span className="session-title">{titleOf(session)}</span>
            <span className="session-time">
              {fmtTime(session.updatedAt)}
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

function AssistantMessage({ msg, isLast, busy, onRegenerate, onFeedback }: { msg: DisplayMessage; isLast: boolean; busy: boolean; onRegenerate(): void; onFeedback(p: Partial<DisplayMessage>): void }) {
  const { client } = useCore();
  const [hinting, setHinting] = useState(false);
  const [hintText, setHintText] = useState(msg.hint ?? "");
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  // Keyboard: closing the hint box (Esc, Cancel, saved) puts focus back on its button.
  const hintButton = useRef<HTMLButtonElement | null>(null);
  const closeHint = () => {
    setHinting(false);
    setTimeout(() => hintButton.current?.focus(), 0);
  };

  const send = async (body: { thumbs?: Thumbs; hint?: string | null }, patch: Partial<DisplayMessage>) => {
    if (!msg.turnId) return;
    setSaving(true);
    try {
      await client.post("/api/feedback", { turnId: msg.turnId, ...body });
      onFeedback(patch);
      setError(null);
      return true;
    } catch (e) {
      setError(`Could not save your feedback: ${messageOf(e)}`);
      return false;
    } finally {
      setSaving(false);
    }
  };

  const thumb = (t: "up" | "down") => {
    if (saving) return;
    const next = msg.thumbs === t ? null : t; // clicking the chosen one again withdraws it
    void send({ thumbs: next }, { thumbs: next });
  };

  // A stopped answer is not recorded by the core (nothing half-way), so it cannot be rated.
  const canRate = !!msg.turnId && !msg.streaming && !msg.stopped && !msg.error;
  return (
    <div className="msg assistant">
      <div className="bubble">
        {msg.content ? <Markdown text={msg.content} /> : msg.streaming ? <span className="typing" aria-label="Answer is being written" /> : null}
        {msg.stopped && <div className="small muted">Stopped.</div>}
        {msg.error && <ErrorNote error={msg.error} />}
      </div>
      {!msg.streaming && (
        <div className="msg-tools">
          {canRate && (
            <>
              <button type="button" className={msg.thumbs === "up" ? "icon on" : "icon"} aria-pressed={msg.thumbs === "up"} aria-label="Thumbs up" title="Good answer" aria-disabled={saving} onClick={() => thumb("up")}>
                <ThumbUpIcon />
              </button>
              <button type="button" className={msg.thumbs === "down" ? "icon on" : "icon"} aria-pressed={msg.thumbs === "down"} aria-label="Thumbs down" title="Bad answer" aria-disabled={saving} onClick={() => thumb("down")}>
                <ThumbDownIcon />
              </button>
              <button
                type="button"
                className="link"
                ref={hintButton}
                aria-expanded={hinting}
                onClick={() => {
                  setHintText(msg.hint ?? "");
                  setHinting((h) => !h);
                }}
              >
                {msg.hint ? "Edit hint" : "Add hint"}
              </button>
            </>
          )}
          {msg.content && <CopyButton text={msg.content} label="Copy answer" />}
          {isLast && !busy && (
            <button type="button" className="link" onClick={onRegenerate}>
              Regenerate
            </button>
          )}
          <span className="tag" title="The adapter version that wrote this answer">
            {msg.adapter ? (msg.adapter === "base" ? "base model" : `adapter ${msg.adapter}`) : "adapter ?"}
          </span>
        </div>
      )}
      {msg.hint && !hinting && (
        <div className="hint-shown">
          <span className="small muted">Your hint:</span> {msg.hint}
          <button type="button" className="link small" onClick={() => void send({ hint: null }, { hint: null })}>
            Remove hint
          </button>
          {/* A hint becomes a standing preference (electron/core/preferences/): the next answer already follows it. */}
          <div className="small muted hint-applies">
            Applies from your next message as a <a href="#/preferences">preference</a>.
          </div>
        </div>
      )}
      {hinting && (
        <form
          className="hint-form"
          onSubmit={(e) => {
            e.preventDefault();
            const h = hintText.trim();
            if (!h) return;
            void send({ hint: h }, { hint: h }).then((ok) => ok && closeHint());
          }}
        >
          <input aria-label="Hint" placeholder="What should the assistant have done instead?" maxLength={500} value={hintText} autoFocus onChange={(e) => setHintText(e.target.value)} onKeyDown={(e) => e.key === "Escape" && closeHint()} />
          <button type="submit" className="primary" disabled={!hintText.trim() || saving}>
            Save hint
          </button>
          <button type="button" onClick={closeHint}>
            Cancel
          </button>
          <div className="small muted hint-applies">Applies from your next message.</div>
        </form>
      )}
      {error && <div className="small error-text" role="alert">{error}</div>}
    </div>
  );
}
