import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ApiError, messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { useChatDefaults } from "../../api/chatDefaults.js";
import { readGeneration, saveChat, takeLegacyChat, type GenerationSettings } from "../../api/generation.js";

/**
 * A chat's generation settings: its own (changed in its header, kept per chat), else the defaults
 * with the system prompt its turns were recorded with (a chat keeps the prompt it began with).
 * Its own settings are stored with its session in the core: typing is saved a moment after it
 * stops, and a new chat's once the core has recorded its first turn.
 */
export function useChatGeneration(sessionId: string | null) {
  const { client } = useCore();
  const defaults = useChatDefaults().value;
  const [own, setOwn] = useState<GenerationSettings | null>(null);
  const [recordedSystem, setRecordedSystem] = useState<string | null>(null);
  const gen = useMemo<GenerationSettings>(
    () => own ?? (recordedSystem !== null ? { ...defaults, systemPrompt: recordedSystem } : defaults),
    [own, recordedSystem, defaults],
  );
  const [genError, setGenError] = useState<string | null>(null);
  // This chat's own settings not yet stored with its session in the core (id null until the
  // answer names a new chat's session).
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

  /** Leaving a chat (for another, or a new one): what was typed last is saved, and the next chat starts from the defaults. */
  const leave = useCallback(() => {
    void flushGen();
    unsaved.current = null;
    setGenError(null);
    setOwn(null);
    setRecordedSystem(null);
  }, [flushGen]);

  /**
   * A recorded chat opened: its own settings as the core keeps them, else those this browser kept
   * before the core did (moved to the session once), and the system prompt of its last turn.
   */
  const restore = useCallback(
    (id: string, stored: GenerationSettings | null, system: string | null) => {
      const legacy = stored === null ? takeLegacyChat(id) : undefined;
      const mine = stored ?? (legacy === undefined ? null : readGeneration(legacy, defaults));
      if (legacy !== undefined && mine) unsaved.current = { id, g: mine, timer: window.setTimeout(() => void flushGen(), 0) };
      setOwn(mine);
      if (system !== null) setRecordedSystem(system);
    },
    [defaults, flushGen],
  );

  /** A new chat's first answer named its session: its own settings are saved there. */
  const sessionStarted = useCallback((id: string) => {
    if (unsaved.current && unsaved.current.id === null) unsaved.current.id = id;
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

  return { gen, ownGen: own !== null, genError, flushGen, leave, restore, sessionStarted, changeGen };
}

/** What useChatGeneration gives: the chat's settings and what changes or saves them. */
export type ChatGeneration = ReturnType<typeof useChatGeneration>;
