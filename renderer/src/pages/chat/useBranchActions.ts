import { useCallback, useState } from "react";
import { useCore } from "../../api/core.js";
import { humanError } from "../../api/humanError.js";
import type { DisplayMessage } from "./displayMessage.js";
import type { ChatSession } from "./useChatSession.js";

/** Switching the branch shown (PUT /api/sessions/:id/active) and deleting a message with what follows it (DELETE /api/turns/:id). */
export function useBranchActions(session: ChatSession, onChanged: () => void) {
  const { client } = useCore();
  const { sessionId, refresh, setMessages } = session;
  const [error, setError] = useState<string | null>(null);

  const switchTo = useCallback(
    async (turnId: string) => {
      if (!sessionId) return;
      setError(null);
      if (!(await refresh(sessionId, { leaf: turnId, mustHold: turnId })))
        setError("That version could not be shown: the chat may have changed. Reopen it to see it as it is now.");
    },
    [sessionId, refresh],
  );

  const remove = useCallback(
    async (msg: DisplayMessage) => {
      const ids = msg.deleteIds ?? [];
      if (!sessionId || ids.length === 0) return;
      const what =
        msg.role === "user"
          ? ids.length > 1
            ? `Delete this message, its ${ids.length} answers and everything after them?`
            : "Delete this message, its answer and everything after it?"
          : "Delete this answer and everything after it?";
      if (!window.confirm(`${what} Other versions are kept. This cannot be undone.`)) return;
      setError(null);
      let deleted = true;
      try {
        for (const id of ids) await client.del(`/api/turns/${encodeURIComponent(id)}`);
      } catch (e) {
        deleted = false;
        setError(`Could not delete it: ${humanError(e, "it is no longer in the history.")}`);
      }
      // The chat as kept now; if none is left to read, what was deleted leaves the screen.
      if (!(await refresh(sessionId)) && deleted)
        setMessages((ms) =>
          ms.slice(
            0,
            Math.max(
              0,
              ms.findIndex((m) => m.key === msg.key),
            ),
          ),
        );
      onChanged();
    },
    [client, sessionId, refresh, onChanged, setMessages],
  );

  return { switchTo, remove, error, clearError: () => setError(null) };
}
