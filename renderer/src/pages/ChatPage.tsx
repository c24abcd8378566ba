import { useEffect, useRef, useState } from "react";
import { useCore, useLive } from "../api/core.js";
import { byLastActivity } from "../format/sessions.js";
import { useChatSession } from "./chat/useChatSession.js";
import { useAnswerStream } from "./chat/useAnswerStream.js";
import { SessionList } from "./chat/SessionList.js";
import { ChatHeader, ChatSettingsPanel } from "./chat/ChatHeader.js";
import { MessageList } from "./chat/MessageList.js";
import { useMessageHandlers } from "./chat/useMessageHandlers.js";
import { useBranchActions } from "./chat/useBranchActions.js";
import { Composer } from "./chat/Composer.js";
import "./chat/conversation.css";

export function ChatPage() {
  const { client, status, reloadStatus } = useCore();
  // No model served: the chat shows the first-run guide and the composer waits for a model.
  const noModel = status !== null && status.model === null;
  const sessions = useLive((c) => c.getJson("/api/sessions").then(byLastActivity), ["session", "sessionDeleted", "turn"]);
  const session = useChatSession();
  const { sessionId, messages, loadError, generation } = session;
  const { busy, ask, regenerate, editQuestion, continueAnswer, stop, decide } = useAnswerStream(session, sessions.reload);
  const branches = useBranchActions(session, sessions.reload);
  const [showGen, setShowGen] = useState(false);
  /** the question whose editor is open (its message key) */
  const [editing, setEditing] = useState<string | null>(null);
  /** the turn a search found, brought into view when its chat opens */
  const [focusTurnId, setFocusTurnId] = useState<string | null>(null);
  const [showSessions, setShowSessions] = useState(false);
  const inputRef = useRef<HTMLTextAreaElement | null>(null);

  const openSession = (id: string, turnId?: string | null) => {
    setShowSessions(false);
    setEditing(null);
    branches.clearError();
    setFocusTurnId(turnId ?? null);
    // A found message on another branch: that branch is shown.
    const show = turnId ? client.json("PUT", `/api/sessions/${encodeURIComponent(id)}/active`, { turnId }).catch(() => undefined) : Promise.resolve();
    void show.then(() => session.open(id));
  };

  const newChat = () => {
    session.startNew();
    setEditing(null);
    setFocusTurnId(null);
    branches.clearError();
    setShowSessions(false);
    inputRef.current?.focus();
  };

  // Esc stops the answer being written, else closes the chats sidebar.
  const { abortRef } = session;
  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "Escape" && abortRef.current) stop();
      else if (e.key === "Escape") setShowSessions(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [stop, abortRef]);

  const handlers = useMessageHandlers({
    session,
    stream: { regenerate, continueAnswer, editQuestion, decide },
    branches,
    setEditing,
    setFocusTurnId,
    onRetry: () => sessionId && void openSession(sessionId),
    onReady: reloadStatus,
  });
  const lastQuestion = messages.filter((m) => m.role === "user").at(-1);

  return (
    <div className={showSessions ? "chat sessions-open" : "chat"}>
      <SessionList
        sessions={sessions}
        activeId={sessionId}
        onNew={newChat}
        onClose={() => setShowSessions(false)}
        onOpen={openSession}
        onDeleted={(id) => (id === sessionId ? newChat() : inputRef.current?.focus())}
      />
      <section className="conversation" aria-label="Conversation">
        <ChatHeader
          sessionId={sessionId}
          showSessions={showSessions}
          showGen={showGen}
          ownGen={generation.ownGen}
          onToggleSessions={() => setShowSessions((v) => !v)}
          onToggleGen={() => setShowGen((v) => !v)}
        />
        {showGen && (
          <ChatSettingsPanel
            gen={generation.gen}
            ownGen={generation.ownGen}
            genError={generation.genError}
            contextSize={status?.model?.contextSize ?? null}
            onChange={generation.changeGen}
            onDone={() => setShowGen(false)}
          />
        )}
        <MessageList
          messages={messages}
          loadError={loadError}
          actionError={branches.error}
          noModel={noModel}
          busy={busy}
          editing={editing}
          focusTurnId={focusTurnId}
          handlers={handlers}
        />
        <Composer
          inputRef={inputRef}
          busy={busy}
          noModel={noModel}
          emptyChat={messages.length === 0}
          onSend={(text) => {
            setFocusTurnId(null);
            ask(text);
          }}
          onStop={stop}
          onEditLast={lastQuestion ? () => setEditing(lastQuestion.key) : undefined}
        />
      </section>
    </div>
  );
}
