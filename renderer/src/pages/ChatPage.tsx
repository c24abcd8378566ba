import { useCallback, useEffect, useRef, useState } from "react";
import { useCore, useLive } from "../api/core.js";
import { byLastActivity } from "../format/sessions.js";
import { useChatSession } from "./chat/useChatSession.js";
import { useAnswerStream } from "./chat/useAnswerStream.js";
import { SessionList } from "./chat/SessionList.js";
import { ChatHeader, ChatSettingsPanel } from "./chat/ChatHeader.js";
import { MessageList } from "./chat/MessageList.js";
import { Composer } from "./chat/Composer.js";
import type { DisplayMessage } from "./chat/displayMessage.js";

export function ChatPage() {
  const { status, reloadStatus } = useCore();
  // No model served: the chat shows the first-run guide and the composer waits for a model.
  const noModel = status !== null && status.model === null;
  const sessions = useLive((c) => c.getJson("/api/sessions").then(byLastActivity), ["session", "sessionDeleted", "turn"]);
  const session = useChatSession();
  const { sessionId, messages, setMessages, loadError, generation } = session;
  const { busy, ask, regenerate, stop, decide } = useAnswerStream(session, sessions.reload);
  const [showGen, setShowGen] = useState(false);
  const [showSessions, setShowSessions] = useState(false);
  const inputRef = useRef<HTMLTextAreaElement | null>(null);

  const openSession = (id: string) => {
    setShowSessions(false);
    void session.open(id);
  };

  const newChat = () => {
    session.startNew();
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

  const setFeedback = useCallback(
    (key: string, patch: Partial<DisplayMessage>) => setMessages((ms) => ms.map((m) => (m.key === key ? { ...m, ...patch } : m))),
    [setMessages],
  );

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
          noModel={noModel}
          busy={busy}
          onRetry={() => sessionId && void openSession(sessionId)}
          onReady={reloadStatus}
          onRegenerate={regenerate}
          onFeedback={setFeedback}
          onDecide={decide}
        />
        <Composer inputRef={inputRef} busy={busy} noModel={noModel} emptyChat={messages.length === 0} onSend={ask} onStop={stop} />
      </section>
    </div>
  );
}
