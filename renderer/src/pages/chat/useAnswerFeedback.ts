import { useState } from "react";
import { useCore } from "../../api/core.js";
import { humanError } from "../../api/humanError.js";
import type { Thumbs } from "../../format/turns.js";
import type { DisplayMessage } from "./displayMessage.js";

/** An answer's feedback (thumbs, hint) sent to POST /api/feedback, shown on the answer once saved. */
export function useAnswerFeedback(msg: DisplayMessage, onFeedback: (p: Partial<DisplayMessage>) => void) {
  const { client } = useCore();
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);

  /** Sends `body`; once saved, `patch` updates the answer. Whether it was saved. */
  const send = async (body: { thumbs?: Thumbs; hint?: string | null }, patch: Partial<DisplayMessage>) => {
    if (!msg.turnId) return;
    setSaving(true);
    try {
      await client.post("/api/feedback", { turnId: msg.turnId, ...body });
      onFeedback(patch);
      setError(null);
      return true;
    } catch (e) {
      setError(`Could not save your feedback: ${humanError(e, "this answer is no longer in the history (its chat may have been deleted).")}`);
      return false;
    } finally {
      setSaving(false);
    }
  };

  const thumb = (t: "up" | "down") => {
    if (saving) return;
    const next = msg.thumbs === t ? null : t; // clicking the chosen one again withdraws it
    void send({ thumbs: next }, { thumbs: next });
  };

  return { send, thumb, saving, error };
}
