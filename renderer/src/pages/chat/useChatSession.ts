import { useCallback, useRef, useState } from "react";
import { useCore } from "../../api/core.js";
import { humanError } from "../../api/humanError.js";
import type { SessionReply } from "../../../../electron/core/api/sessions.js";
import { promptTexts } from "../../format/turns.js";
import { displayTree, keepLive, systemPromptOf, type DisplayMessage } from "./displayMessage.js";
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
  /**
   * Answers cut by the token limit, seen streaming (the recorded turn does not keep its finish
   * reason): they keep their Continue while the app runs.
   */
  const cutTurns = useRef(new Set<string>());
  const markCut = useCallback((turnId: string) => cutTurns.current.add(turnId), []);
  const shown = useCallback(
    (raw: SessionReply) => displayTree(raw).map((m) => (m.role === "assistant" && m.turnId && cutTurns.current.has(m.turnId) ? { ...m, cut: true } : m)),
    [],
  );

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
        setMessages(shown(raw));
      } catch (e) {
        setLoadError(humanError(e, "This chat is no longer in the history (it may have been deleted)."));
      }
    },
    [client, leave, restore, shown],
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

  /**
   * Shows the chat as the core keeps it now (after an answer, a branch switch, a delete), without
   * clearing the screen first. `leaf`: the turn to show (made active first). When the core has not
   * recorded `mustHold` (an answer stopped before the core kept it, a scripted answer), or cannot
   * be asked, what is on screen stays. Whether the screen now shows the core's tree.
   */
  const refresh = useCallback(
    async (id: string, opts: { leaf?: string | null; mustHold?: string | null } = {}) => {
      const path = `/api/sessions/${encodeURIComponent(id)}` as const;
      // A core without branches (or a turn it did not keep) refuses the switch: the chat is read as it is.
      if (opts.leaf) await client.json("PUT", `${path}/active`, { turnId: opts.leaf }).catch(() => undefined);
      try {
        const raw: SessionReply = await client.getJson(path);
        if (opening.current !== id) return false;
        if (opts.mustHold && !raw.turns.some((t) => t.turnId === opts.mustHold)) return false;
        // The branch asked for is not the one the core shows (it refused the switch): the screen stays.
        if (opts.leaf && raw.activePath && !raw.activePath.includes(opts.leaf)) return false;
        setMessages((live) => keepLive(shown(raw), live));
        return true;
      } catch {
        return false;
      }
    },
    [client, shown],
  );

  /** The chat as recorded, on the branch of `turnId`; a stopped answer is kept by the core a moment after the stop. */
  const showRecorded = useCallback(
    async (id: string, turnId: string, stopped: boolean) => {
      for (let tries = stopped ? 5 : 1; tries > 0; tries--) {
        if (await refresh(id, { leaf: turnId, mustHold: turnId })) return;
        if (tries > 1) await new Promise((r) => window.setTimeout(r, 300));
      }
    },
    [refresh],
  );

  return { sessionId, messages, setMessages, loadError, generation, abortRef, open, startNew, started, refresh, showRecorded, markCut };
}

/** What useChatSession gives. */
export type ChatSession = ReturnType<typeof useChatSession>;
