import { useEffect, useRef } from "react";
import { FirstRun } from "../../chat/FirstRun.js";
import type { Decision } from "../../chat/agentLoop.js";
import { ErrorNote } from "../../components/Notices.js";
import { AssistantMessage } from "./AssistantMessage.js";
import type { DisplayMessage } from "./displayMessage.js";

/** The conversation's messages (kept scrolled to the newest), or the first-run guide or the empty chat's greeting. */
export function MessageList({
  messages,
  loadError,
  noModel,
  busy,
  onRetry,
  onReady,
  onRegenerate,
  onFeedback,
  onDecide,
}: {
  messages: DisplayMessage[];
  loadError: string | null;
  noModel: boolean;
  busy: boolean;
  onRetry: () => void;
  onReady: () => void;
  onRegenerate: () => void;
  onFeedback: (key: string, patch: Partial<DisplayMessage>) => void;
  onDecide: (callId: string, d: Decision) => void;
}) {
  const listRef = useRef<HTMLDivElement | null>(null);
  // Keep the newest text in view while it streams.
  useEffect(() => {
    const el = listRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant");
  return (
    <div className="messages" ref={listRef} aria-live="polite">
      {loadError && <ErrorNote error={loadError} onRetry={onRetry} />}
      {messages.length === 0 && !loadError && noModel && <FirstRun onReady={onReady} />}
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
          <AssistantMessage
            key={m.key}
            msg={m}
            isLast={i === lastAssistant}
            busy={busy}
            onRegenerate={onRegenerate}
            onFeedback={(p) => onFeedback(m.key, p)}
            onDecide={onDecide}
          />
        ),
      )}
    </div>
  );
}
