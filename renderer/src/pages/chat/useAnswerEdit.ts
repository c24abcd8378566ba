import { useState } from "react";
import { useCore } from "../../api/core.js";
import { humanError } from "../../api/humanError.js";
import type { AnswerEditRequest } from "../../../../electron/core/api/sessions.js";
import type { DisplayMessage } from "./displayMessage.js";

/** An answer's rewrite by the user ("what it should have said"), sent to POST /api/turns/:id/answer-edit and shown once saved. */
export function useAnswerEdit(msg: DisplayMessage, onSaved: (p: Partial<DisplayMessage>) => void) {
  const { client } = useCore();
  const [open, setOpen] = useState(false);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const save = async (text: string) => {
    if (!msg.turnId) return;
    setSaving(true);
    try {
      const body: AnswerEditRequest = { text };
      await client.post(`/api/turns/${encodeURIComponent(msg.turnId)}/answer-edit`, body);
      onSaved({ answerEdit: { text, time: new Date().toISOString() } });
      setError(null);
      setOpen(false);
    } catch (e) {
      setError(`Your correction was not saved: ${humanError(e, "this answer is no longer in the history (its chat may have been deleted).")}`);
    } finally {
      setSaving(false);
    }
  };

  const close = () => {
    setOpen(false);
    setError(null);
  };

  return { open, setOpen, saving, error, save, close };
}
