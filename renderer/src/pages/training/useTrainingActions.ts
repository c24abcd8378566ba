import { useState } from "react";
import { ApiError, messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { engineName } from "../../components/terms.js";

/** The Training page's actions (train now, pause, resume, keep a judge's hint), one at a time, with the last action's error. */
export function useTrainingActions({ onActed, onKept }: { onActed: () => void; onKept: () => void }) {
  const { client, reloadStatus } = useCore();
  const [actionError, setActionError] = useState<string | null>(null);
  const [pending, setPending] = useState<string | null>(null);

  // A judge's hint the user accepts becomes a preference (source "judge"), from the next message on.
  const keep = async (turnId: string, text: string) => {
    setActionError(null);
    try {
      await client.post("/api/preferences", { text, turnId });
      onKept();
    } catch (e) {
      setActionError(messageOf(e));
    }
  };

  const act = async (what: string, path: string) => {
    if (pending !== null) return;
    setPending(what);
    setActionError(null);
    try {
      await client.post(path);
      reloadStatus();
      onActed();
    } catch (e) {
      setActionError(e instanceof ApiError && e.notAvailable ? `${what}: not offered by ${engineName} (it runs without learning).` : messageOf(e));
    } finally {
      setPending(null);
    }
  };

  return { actionError, pending, keep, act };
}
