import { useEffect, useRef, useState } from "react";
import { messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import type { ActivateReply } from "../../../../electron/core/api/training.js";
import type { CheckpointView } from "../../../../electron/core/api/training.js";

/**
 * The Checkpoints page's actions: ask to serve a checkpoint (or "base", the model with no adapter),
 * serve it once confirmed, pin or unpin; with the swap in progress, its outcome and the focus moves.
 */
export function useCheckpointActions(onChanged: () => void) {
  const { client, reloadStatus } = useCore();
  // What the dialog asks to serve: a checkpoint, or "base" (the model with no adapter).
  const [confirm, setConfirm] = useState<CheckpointView | "base" | null>(null);
  const [swapping, setSwapping] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Keyboard: focus goes back to the Roll back button that opened the dialog when it is
  // cancelled, and to the outcome (done or error) when a roll back finishes.
  const opener = useRef<HTMLButtonElement | null>(null);
  const outcome = useRef<HTMLDivElement | null>(null);
  const focusOutcome = useRef(false);
  // After every render: the one that shows a finished roll back's outcome moves the focus there.
  useEffect(() => {
    if (!focusOutcome.current) return;
    focusOutcome.current = false;
    outcome.current?.focus();
  });

  /** Opens the dialog for `target`, from the button that asked (focus returns there on cancel). */
  const ask = (target: CheckpointView | "base", button: HTMLButtonElement) => {
    opener.current = button;
    setConfirm(target);
  };

  const cancel = () => {
    setConfirm(null);
    // After React has removed the dialog (its removal would take focus with it).
    setTimeout(() => opener.current?.focus(), 0);
  };

  const activate = async (c: CheckpointView | "base") => {
    const name = c === "base" ? "the model with no adapter" : c.version;
    // Focus out of the dialog before React removes it: Chromium gives a removed modal dialog's
    // focus back to its opener, and when the swap answered first that came after the outcome's
    // focus (a keyboard e2e run that timed out waiting for the focus on "Now serving").
    if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
    setConfirm(null);
    setSwapping(name);
    setDone(null);
    setError(null);
    try {
      const { swap } = await client.post<ActivateReply>(`/api/checkpoints/${c === "base" ? "base" : c.n}/activate`);
      setDone(`Now serving ${name}. The next answer in Chat uses it. The swap held new requests for ${Math.round(swap.pauseMs)} ms.`);
    } catch (e) {
      setError(`Could not roll back to ${name}: ${messageOf(e)}`);
    } finally {
      focusOutcome.current = true;
      setSwapping(null);
      onChanged();
      reloadStatus();
    }
  };

  const pin = async (c: CheckpointView) => {
    try {
      await client.post(`/api/checkpoints/${c.n}/pin`, { pinned: !c.pinned });
      onChanged();
    } catch (e) {
      setError(messageOf(e));
    }
  };

  return { confirm, swapping, done, error, outcome, ask, cancel, activate, pin };
}
