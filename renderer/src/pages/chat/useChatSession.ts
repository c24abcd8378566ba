import { useCallback, useRef, useState } from "react";
import { useCore } from "../../api/core.js";
import { humanError } from "../../api/humanError.js";
import { turnMessages } from "../../chat/history.js";
import { promptTexts } from "../../format/turns.js";
import { displayHistory, systemPromptOf, type DisplayMessage } from "./displayMessage.js";
import { useChatGeneration } from "./useChatGeneration.js";

/**
 * The chat shown: its session (null for a new chat until its first answer names one), its
 * messages, and its generation settings; opening a recorded chat or starting a new one stops an
 * answer in progress.
 */
export function useChatSession() {
  const { client } = useCore();
  const [sessionId, setSessionId] = useState<string | null>(null);
  const [messages, setMessages] = useState<DisplayMessage[]>([]);
  const [loadError, setLoadError] = useState<string | null>(null);
  const generation = useChatGeneration(sessionId);
  const { leave, restore, sessionStarted } = generation;
  /** The answer streaming now, to stop it. */
  const abortRef = useRef<AbortController | null>(null);
  /** The chat whose history is loading or shown: a slower load of one opened before is dropped. */
  const opening = useRef<string | null>(null);

  const open = useCallback(
    async (id: string) => {
      abortRef.current?.abort();
      setSessionId(id);
      setLoadError(null);
      setMessages([]);
      leave();
      opening.current = id;
      try {
        const raw = await client.getJson(`/api/sessions/${encodeURIComponent(id)}`);
        if (opening.current !== id) return; // another chat was opened meanwhile
        const mainTurns = raw.turns.filter((t) => t.type !== "side");
        restore(id, raw.session.generation ?? null, mainTurns.length ? systemPromptOf(promptTexts(mainTurns[mainTurns.length - 1])) : null);
        setMessages(displayHistory(mainTurns, turnMessages(raw)));
      } catch (e) {
        setLoadError(humanError(e, "This chat is no longer in the history (it may have been deleted)."));
      }
    },
    [client, leave, restore],
  );

  const startNew = useCallback(() => {
    abortRef.current?.abort();
    leave();
    opening.current = null;
    setSessionId(null);
    setMessages([]);
    setLoadError(null);
  }, [leave]);

  /** The core recorded a new chat's first turn under `id`. */
  const started = useCallback(
    (id: string) => {
      setSessionId(id);
      opening.current = id;
      sessionStarted(id);
    },
    [sessionStarted],
  );

  return { sessionId, messages, setMessages, loadError, generation, abortRef, open, startNew, started };
}

/** What useChatSession gives. */
export type ChatSession = ReturnType<typeof useChatSession>;
