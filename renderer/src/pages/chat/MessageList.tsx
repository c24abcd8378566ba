import { useEffect, useRef } from "react";
import { FirstRun } from "../../chat/FirstRun.js";
import type { Decision } from "../../chat/agentLoop.js";
import { ErrorNote } from "../../components/Notices.js";
import { AssistantMessage } from "./AssistantMessage.js";
import { UserMessage } from "./UserMessage.js";
import type { DisplayMessage } from "./displayMessage.js";

/** What the messages do: answer again, rate, decide on tool calls, edit a question, switch versions, delete. */
export interface MessageHandlers {
  onRetry: () => void;
  onReady: () => void;
  onRegenerate: () => void;
  onContinue: () => void;
  onFeedback: (key: string, patch: Partial<DisplayMessage>) => void;
  onDecide: (callId: string, d: Decision) => void;
  /** opens (key) or closes (null) a question's editor */
  onEditing: (key: string | null) => void;
  onEditQuestion: (index: number, text: string) => void;
  onSwitch: (turnId: string) => void;
  onDelete: (msg: DisplayMessage) => void;
}

/**
 * The conversation's messages (kept scrolled to the newest, or to the turn a search found), or the
 * first-run guide or the empty chat's greeting.
 */
export function MessageList({
  messages,
  loadError,
  actionError,
  noModel,
  busy,
  editing,
  focusTurnId,
  handlers: h,
}: {
  messages: DisplayMessage[];
  loadError: string | null;
  actionError: string | null;
  noModel: boolean;
  busy: boolean;
  editing: string | null;
  focusTurnId: string | null;
  handlers: MessageHandlers;
}) {
  const listRef = useRef<HTMLDivElement | null>(null);
  // Keep the newest text in view while it streams; a search hit's turn is brought into view once shown.
  useEffect(() => {
    const el = listRef.current;
    if (!el) return;
    const found = focusTurnId ? el.querySelector<HTMLElement>(`[data-turn="${CSS.escape(focusTurnId)}"]`) : null;
    if (found) {
      found.scrollIntoView({ block: "center" });
      found.classList.add("found");
    } else el.scrollTop = el.scrollHeight;
  }, [messages, focusTurnId]);

  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant");
  return (
    <div className="messages" ref={listRef} aria-live="polite">
      {loadError && <ErrorNote error={loadError} onRetry={h.onRetry} />}
      {messages.length === 0 && !loadError && noModel && <FirstRun onReady={h.onReady} />}
      {messages.length === 0 && !loadError && !noModel && (
        <div className="empty">
          <h2>What can I help with?</h2>
          <p className="muted">Answers learn from your feedback: use the thumbs and hints under each answer.</p>
        </div>
      )}
      {messages.map((m, i) =>
        m.role === "user" ? (
          <UserMessage
            key={m.key}
            msg={m}
            editing={editing === m.key}
            busy={busy || noModel}
            onEdit={() => h.onEditing(m.key)}
            onCancelEdit={() => h.onEditing(null)}
            onSend={(text) => h.onEditQuestion(i, text)}
            onSwitch={h.onSwitch}
            onDelete={() => h.onDelete(m)}
          />
        ) : (
          <AssistantMessage
            key={m.key}
            msg={m}
            isLast={i === lastAssistant}
            busy={busy}
            onRegenerate={h.onRegenerate}
            onContinue={h.onContinue}
            onFeedback={(p) => h.onFeedback(m.key, p)}
            onDecide={h.onDecide}
            onSwitch={h.onSwitch}
            onDelete={() => h.onDelete(m)}
          />
        ),
      )}
      {actionError && <ErrorNote error={actionError} />}
    </div>
  );
}
