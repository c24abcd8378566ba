import { useCallback } from "react";
import type { Decision } from "../../chat/agentLoop.js";
import type { MessageHandlers } from "./MessageList.js";
import type { DisplayMessage } from "./displayMessage.js";
import type { ChatSession } from "./useChatSession.js";
import type { useBranchActions } from "./useBranchActions.js";

/** What the chat's messages do, wired to the answer stream, the branch actions and the page's state (the open editor, the found turn). */
export function useMessageHandlers({
  session,
  stream,
  branches,
  setEditing,
  setFocusTurnId,
  onRetry,
  onReady,
}: {
  session: ChatSession;
  stream: {
    regenerate: () => void;
    continueAnswer: () => void;
    editQuestion: (index: number, text: string) => void;
    decide: (callId: string, d: Decision) => void;
  };
  branches: ReturnType<typeof useBranchActions>;
  setEditing: (key: string | null) => void;
  setFocusTurnId: (turnId: string | null) => void;
  onRetry: () => void;
  onReady: () => void;
}): MessageHandlers {
  const { setMessages } = session;
  const onFeedback = useCallback(
    (key: string, patch: Partial<DisplayMessage>) => setMessages((ms) => ms.map((m) => (m.key === key ? { ...m, ...patch } : m))),
    [setMessages],
  );
  return {
    onRetry,
    onReady,
    onRegenerate: () => {
      setFocusTurnId(null);
      stream.regenerate();
    },
    onContinue: stream.continueAnswer,
    onFeedback,
    onDecide: stream.decide,
    onEditing: setEditing,
    onEditQuestion: (index, text) => {
      setEditing(null);
      setFocusTurnId(null);
      stream.editQuestion(index, text);
    },
    onSwitch: (turnId) => void branches.switchTo(turnId),
    onDelete: (m) => void branches.remove(m),
  };
}
