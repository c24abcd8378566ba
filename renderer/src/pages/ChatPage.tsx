import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import { ApiError, messageOf } from "../api/client.js";
import type { ChatMessage } from "../api/chat.js";
import { useChatDefaults } from "../api/chatDefaults.js";
import { readGeneration, requestParams, saveChat, takeLegacyChat, type GenerationSettings } from "../api/generation.js";
import { humanError } from "../api/humanError.js";
import { useCore, useLive } from "../api/core.js";
import { readSession, readSessions, type AnswerSpeed, type SessionSummary, type Thumbs } from "../api/shapes.js";
import { Markdown, CopyButton } from "../components/Markdown.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { PencilIcon, SidebarIcon, SlidersIcon, ThumbDownIcon, ThumbUpIcon, TrashIcon } from "../components/Icons.js";
import { adapterLabel, fmtTime } from "../components/format.js";
import { GenerationForm } from "../components/GenerationForm.js";
import { ModelPicker } from "../components/ModelPicker.js";
import { ToolCallCard } from "../components/ToolCallCard.js";
import { answerToWire, runAgentLoop, type Decision, type ToolCallView, type ToolStep } from "../chat/agentLoop.js";
import { useChatTools, useDecisions } from "../chat/useChatTools.js";
import { toolStepsOf, turnMessages } from "../chat/history.js";
import { FirstRun } from "../chat/FirstRun.js";

interface DisplayMessage {
  key: string;
  role: "user" | "assistant";
  content: string;
  turnId?: string | null;
  adapter?: string | null;
  /** the served model that wrote it */
  model?: string | null;
  thumbs?: Thumbs;
  hint?: string | null;
  /** standing preferences its prompt carried */
  preferences?: number;
  /** how fast it was written */
  speed?: AnswerSpeed | null;
  streaming?: boolean;
  stopped?: boolean;
  error?: string;
  /** rounds of this answer that called tools, before its final words (`content`) */
  steps?: ToolStep[];
  /** the step limit ended the tool calls */
  stepLimit?: boolean;
}

/** A message as sent to /v1: an answer that used tools goes with its calls and their results. */
function toWire(m: DisplayMessage): ChatMessage[] {
  if (m.role === "assistant" && m.steps?.length) return answerToWire(m.steps, m.content);
  return [{ role: m.role, content: m.content }];
}

/** The call `call` replaces in whichever step holds it. */
function withCall(steps: ToolStep[] | undefined, call: ToolCallView): ToolStep[] | undefined {
  return steps?.map((s) => (s.calls.some((c) => c.id === call.id) ? { ...s, calls: s.calls.map((c) => (c.id === call.id ? call : c)) } : s));
}

let keySeq = 0;
const nextKey = () => `m${++keySeq}`;

function titleOf(s: SessionSummary): string {
  return s.title || "Untitled chat";
}

/** The system prompt a recorded turn was asked with ("" when none). */
function systemPromptOf(messages: { role: string; content: string }[]): string {
  return messages.find((m) => m.role === "system")?.content ?? "";
}

export function ChatPage() {
  const { client, status, reloadStatus } = useCore();
  // No model served: the chat shows the first-run guide and the composer waits for a model.
  const noModel = status !== null && status.model === null;
  const sessions = useLive((c) => c.getJson("/api/sessions").then(readSessions), ["session", "sessionDeleted", "turn"]);
  const [sessionId, setSessionId] = useState<string | null>(null);
  const [messages, setMessages] = useState<DisplayMessage[]>([]);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [input, setInput] = useState("");
  const [search, setSearch] = useState("");
  const [busy, setBusy] = useState(false);
  const chatTools = useChatTools();
  const decisions = useDecisions();
  // This chat's generation settings: its own (changed in its header, kept per chat), else the
  // defaults with the system prompt its turns were recorded with (a chat keeps the prompt it began with).
  const defaults = useChatDefaults().value;
  const [own, setOwn] = useState<GenerationSettings | null>(null);
  const [recordedSystem, setRecordedSystem] = useState<string | null>(null);
  const gen = useMemo<GenerationSettings>(() => own ?? (recordedSystem !== null ? { ...defaults, systemPrompt: recordedSystem } : defaults), [own, recordedSystem, defaults]);
  const ownGen = own !== null;
  const [showGen, setShowGen] = useState(false);
  const [genError, setGenError] = useState<string | null>(null);
  // This chat's own settings not yet stored with its session in the core: typing is saved a
  // moment after it stops, and a new chat's once the core has recorded its first turn (id null
  // until the answer names its session).
  const unsaved = useRef<{ id: string | null; g: GenerationSettings | null; timer: number | null } | null>(null);
  const flushGen = useCallback(async () => {
    const u = unsaved.current;
    if (!u || u.id === null) return;
    if (u.timer !== null) window.clearTimeout(u.timer);
    u.timer = null;
    try {
      await saveChat(client, u.id, u.g);
      if (unsaved.current === u) unsaved.current = null;
      setGenError(null);
    } catch (e) {
      // 404: the session is not recorded yet (its first answer was stopped): kept for the next answer.
      if (!(e instanceof ApiError && e.status === 404)) setGenError(`This chat's settings were not saved: ${messageOf(e)}`);
    }
  }, [client]);
  const [showSessions, setShowSessions] = useState(false);
  const abortRef = useRef<AbortController | null>(null);
  /** The chat whose history is loading or shown: a slower load of one opened before is dropped. */
  const opening = useRef<string | null>(null);
  const listRef = useRef<HTMLDivElement | null>(null);
  const inputRef = useRef<HTMLTextAreaElement | null>(null);

  const openSession = useCallback(
    async (id: string) => {
      abortRef.current?.abort();
      setSessionId(id);
      setLoadError(null);
      setMessages([]);
      setShowSessions(false);
      void flushGen();
      unsaved.current = null;
      setGenError(null);
      setOwn(null);
      setRecordedSystem(null);
      opening.current = id;
      try {
        const raw = await client.getJson(`/api/sessions/${encodeURIComponent(id)}`);
        if (opening.current !== id) return; // another chat was opened meanwhile
        const detail = readSession(raw);
        // Settings this browser kept before the core did move to the session once.
        const legacy = detail.generation === null ? takeLegacyChat(id) : undefined;
        const mine = detail.generation ?? (legacy === undefined ? null : readGeneration(legacy, defaults));
        if (legacy !== undefined && mine) unsaved.current = { id, g: mine, timer: window.setTimeout(() => void flushGen(), 0) };
        setOwn(mine);
        const prompts = turnMessages(raw);
        const shown: DisplayMessage[] = [];
        const mainTurns = detail.turns.filter((t) => t.type !== "side");
        for (const t of mainTurns) {
          // A turn after tool results continues the answer before it (the agent loop's next request).
          const steps = toolStepsOf(prompts.get(t.id));
          const prev = shown[shown.length - 1];
          if (steps && prev?.role === "assistant") {
            shown[shown.length - 1] = { ...prev, content: t.response, steps, turnId: t.id, adapter: t.adapter, model: t.model, thumbs: t.thumbs, hint: t.hint, preferences: t.preferences, speed: t.speed };
            continue;
          }
          if (t.userText) shown.push({ key: nextKey(), role: "user", content: t.userText });
          shown.push({ key: nextKey(), role: "assistant", content: t.response, turnId: t.id, adapter: t.adapter, model: t.model, thumbs: t.thumbs, hint: t.hint, preferences: t.preferences, speed: t.speed });
        }
        if (mainTurns.length) setRecordedSystem(systemPromptOf(mainTurns[mainTurns.length - 1].messages));
        setMessages(shown);
      } catch (e) {
        setLoadError(humanError(e, "This chat is no longer in the history (it may have been deleted)."));
      }
    },
    [client, defaults, flushGen],
  );

  const newChat = useCallback(() => {
    abortRef.current?.abort();
    void flushGen();
    unsaved.current = null;
    opening.current = null;
    setGenError(null);
    setSessionId(null);
    setMessages([]);
    setLoadError(null);
    setOwn(null);
    setRecordedSystem(null);
    setShowSessions(false);
    inputRef.current?.focus();
  }, []);

  const changeGen = useCallback(
    (g: GenerationSettings | null) => {
      setOwn(g);
      if (unsaved.current?.timer) window.clearTimeout(unsaved.current.timer);
      unsaved.current = { id: sessionId, g, timer: sessionId === null ? null : window.setTimeout(() => void flushGen(), 400) };
    },
    [sessionId, flushGen],
  );
  // Leaving the chat page saves what was typed last.
  useEffect(() => () => void flushGen(), [flushGen]);

  // Keep the newest text in view while it streams.
  useEffect(() => {
    const el = listRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const stop = useCallback(() => abortRef.current?.abort(), []);

  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "Escape" && abortRef.current) stop();
      else if (e.key === "Escape") setShowSessions(false);
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
      const wire: ChatMessage[] = history.filter((m) => !m.error || m.content || m.steps?.length).flatMap(toWire);
      if (gen.systemPrompt.trim()) wire.unshift({ role: "system", content: gen.systemPrompt.trim() });
      const isNew = sessionId === null;
      try {
        // The tools as they are now (a change on the Tools page counts from the next answer).
        const { tools, always } = await chatTools.refresh();
        const { info } = await runAgentLoop({
          client,
          messages: wire,
          sessionId,
          tools,
          alwaysAllowed: always,
          maxSteps: gen.toolSteps,
          params: requestParams(gen, status?.model?.contextSize ?? null),
          signal: ctrl.signal,
          handlers: {
            onStart: (info) => {
              update((m) => ({ ...m, turnId: info.turnId, adapter: info.adapter, preferences: info.preferences }));
              if (info.sessionId) {
                setSessionId(info.sessionId);
                opening.current = info.sessionId;
                if (unsaved.current && unsaved.current.id === null) unsaved.current.id = info.sessionId;
              }
            },
            onModel: (model) => update((m) => ({ ...m, model })),
            onDelta: (d) => {
              // Re-rendering the markdown for every token makes long answers crawl (each render
              // parses the whole text): collect tokens and render them ~30 times a second (a timer,
              // not requestAnimationFrame, so a background tab still fills in).
              pending += d;
              if (flushTimer === null) flushTimer = window.setTimeout(flush, 33);
            },
            // The words so far and the calls become a finished step; the next words start after the cards.
            onToolStep: (step) => {
              flushNow();
              update((m) => ({ ...m, content: "", steps: [...(m.steps ?? []), step] }));
            },
            onCall: (call) => update((m) => ({ ...m, steps: withCall(m.steps, call) })),
            decide: decisions.decide,
          },
        }).then((r) => {
          if (r.stepLimitReached) update((m) => ({ ...m, stepLimit: true }));
          return r;
        });
        flushNow();
        update((m) => ({ ...m, streaming: false, speed: info.speed }));
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
        void flushGen(); // a new chat's own settings, now that the core has its session
      }
    },
    [client, sessionId, sessions, gen, status?.model?.contextSize, flushGen, chatTools, decisions.decide],
  );

  const send = useCallback(() => {
    const text = input.trim();
    if (!text || busy || noModel) return;
    setInput("");
    void answer([...messages, { key: nextKey(), role: "user", content: text }]);
  }, [answer, busy, input, messages, noModel]);

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
    <div className={showSessions ? "chat sessions-open" : "chat"}>
      <aside className="sessions" id="chat-sessions" aria-label="Chats">
        <div className="sessions-head">
          <button type="button" className="primary wide" onClick={newChat}>
            New chat
          </button>
          <button type="button" className="icon sessions-close" aria-label="Close chats" title="Close chats (Esc)" onClick={() => setShowSessions(false)}>
            <SidebarIcon />
          </button>
        </div>
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
        <header className="chat-header">
          <button type="button" className="icon sessions-toggle" aria-label="Chats" title="Chats" aria-expanded={showSessions} aria-controls="chat-sessions" onClick={() => setShowSessions((v) => !v)}>
            <SidebarIcon />
          </button>
          <ModelPicker />
          <button type="button" className={ownGen ? "gen-toggle on" : "gen-toggle"} aria-expanded={showGen} aria-controls="chat-generation" onClick={() => setShowGen((v) => !v)} title="System prompt, temperature, max tokens for this chat">
            <SlidersIcon /> <span>Chat settings</span>
          </button>
        </header>
        {showGen && (
          <section className="chat-generation" id="chat-generation" aria-label="Chat settings">
            <GenerationForm value={gen} onChange={(g) => changeGen(g)} contextSize={status?.model?.contextSize ?? null} />
            <div className="actions">
              <span className="small muted">{ownGen ? "This chat has its own settings." : "This chat uses the defaults from Settings."}</span>
              {genError && (
                <span className="small error-text" role="alert">
                  {genError}
                </span>
              )}
              {ownGen && (
                <button type="button" className="link" onClick={() => changeGen(null)}>
                  Use the defaults
                </button>
              )}
              <button type="button" onClick={() => setShowGen(false)}>
                Done
              </button>
            </div>
          </section>
        )}
        <div className="messages" ref={listRef} aria-live="polite">
          {loadError && <ErrorNote error={loadError} onRetry={() => sessionId && void openSession(sessionId)} />}
          {messages.length === 0 && !loadError && noModel && <FirstRun onReady={reloadStatus} />}
          {messages.length === 0 && !loadError && !noModel && (
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
              <AssistantMessage key={m.key} msg={m} isLast={i === lastAssistant} busy={busy} onRegenerate={regenerate} onFeedback={(p) => setFeedback(m.key, p)} onDecide={decisions.answer} />
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
          <textarea
            ref={inputRef}
            aria-label="Message"
            aria-describedby={noModel ? "composer-no-model" : undefined}
            placeholder={noModel ? "Choose a model first" : "Message ClawRL (Enter sends, Shift+Enter new line)"}
            rows={1}
            value={input}
            disabled={noModel}
            onChange={(e) => setInput(e.target.value)}
            onKeyDown={onComposerKey}
            autoFocus
          />
          {busy ? (
            <button type="button" className="danger" onClick={stop} title="Stop (Esc)">
              Stop
            </button>
          ) : (
            <button type="submit" className="primary" disabled={!input.trim() || noModel}>
              Send
            </button>
          )}
        </form>
        {noModel && (
          <p className="small muted composer-hint" id="composer-no-model">
            No model is loaded yet: download or import one {messages.length === 0 ? "above" : <>on the <a href="#/models">Models</a> page</>} to start chatting.
          </p>
        )}
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

/** "21.3 tok/s · 48 tokens · 0.33 s to first token", as local-model apps show under an answer. */
function AnswerSpeedNote({ speed }: { speed: AnswerSpeed }) {
  const parts = [
    speed.tokensPerSecond !== null ? `${speed.tokensPerSecond.toFixed(1)} tok/s` : null,
    `${speed.tokens} token${speed.tokens === 1 ? "" : "s"}`,
    `${speed.firstTokenSeconds.toFixed(2)} s to first token`,
  ].filter(Boolean);
  return (
    <span className="small muted answer-speed" title="How fast this answer was written on this machine">
      {parts.join(" · ")}
    </span>
  );
}

function AssistantMessage({ msg, isLast, busy, onRegenerate, onFeedback, onDecide }: { msg: DisplayMessage; isLast: boolean; busy: boolean; onRegenerate(): void; onFeedback(p: Partial<DisplayMessage>): void; onDecide(callId: string, d: Decision): void }) {
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
      setError(`Could not save your feedback: ${humanError(e, "this answer is no longer in the history (its chat may have been deleted).")}`);
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

  const waitingForUser = msg.steps?.some((s) => s.calls.some((c) => c.status === "waiting" || c.status === "running")) ?? false;
  // A stopped answer is not recorded by the core (nothing half-way), so it cannot be rated.
  const canRate = !!msg.turnId && !msg.streaming && !msg.stopped && !msg.error;
  return (
    <div className="msg assistant">
      <div className="bubble">
        {msg.steps?.map((s, i) => (
          <div key={i} className="tool-step">
            {s.text && <Markdown text={s.text} />}
            {s.calls.map((c) => (
              <ToolCallCard key={c.id} call={c} onDecide={msg.streaming ? (d) => onDecide(c.id, d) : undefined} />
            ))}
          </div>
        ))}
        {msg.content ? (
          <Markdown text={msg.content} />
        ) : msg.streaming ? (
          !waitingForUser && <span className="typing" aria-label="Answer is being written" />
        ) : (
          // An empty answer says so rather than leaving a blank bubble.
          !msg.error && !msg.stopped && !msg.steps?.length && <p className="small muted">The model ended its answer without writing anything.</p>
        )}
        {msg.stepLimit && <div className="small muted">The assistant reached its limit of tool steps for one answer, so it answered without more tools.</div>}
        {msg.stopped && <div className="small muted">Stopped.</div>}
        {msg.error && <ErrorNote error={msg.error} />}
      </div>
      {!msg.streaming && (
        <div className="msg-tools">
          {canRate && (
            <>
              <button type="button" className={msg.thumbs === "up" ? "icon thumb on up" : "icon thumb"} aria-pressed={msg.thumbs === "up"} aria-label="Thumbs up" title={msg.thumbs === "up" ? "Rated up: click to withdraw" : "Good answer"} aria-disabled={saving} onClick={() => thumb("up")}>
                <ThumbUpIcon />
                {msg.thumbs === "up" && <span className="thumb-label">Rated up</span>}
              </button>
              <button type="button" className={msg.thumbs === "down" ? "icon thumb on down" : "icon thumb"} aria-pressed={msg.thumbs === "down"} aria-label="Thumbs down" title={msg.thumbs === "down" ? "Rated down: click to withdraw" : "Bad answer"} aria-disabled={saving} onClick={() => thumb("down")}>
                <ThumbDownIcon />
                {msg.thumbs === "down" && <span className="thumb-label">Rated down</span>}
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
          <span className="tag answer-source" title="The model, and the adapter on it, that wrote this answer">
            {[msg.model, msg.adapter ? adapterLabel(msg.adapter) : null].filter(Boolean).join(" · ") || "—"}
          </span>
          {msg.speed && <AnswerSpeedNote speed={msg.speed} />}
          {(msg.preferences ?? 0) > 0 && (
            <a className="tag answer-prefs" href="#/preferences" title="Your standing preferences were in this answer's prompt">
              {msg.preferences === 1 ? "1 preference" : `${msg.preferences} preferences`}
            </a>
          )}
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
