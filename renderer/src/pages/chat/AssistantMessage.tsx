import { useRef, useState } from "react";
import type { Decision } from "../../chat/agentLoop.js";
import { AnswerBubble } from "./AnswerBubble.js";
import { AnswerActions } from "./AnswerActions.js";
import { HintForm, HintShown } from "./AnswerHint.js";
import { useAnswerFeedback } from "./useAnswerFeedback.js";
import type { DisplayMessage } from "./displayMessage.js";

/** One answer: its bubble, and once written its feedback row, its hint and the hint box. */
export function AssistantMessage({
  msg,
  isLast,
  busy,
  onRegenerate,
  onFeedback,
  onDecide,
}: {
  msg: DisplayMessage;
  isLast: boolean;
  busy: boolean;
  onRegenerate: () => void;
  onFeedback: (p: Partial<DisplayMessage>) => void;
  onDecide: (callId: string, d: Decision) => void;
}) {
  const { send, thumb, saving, error } = useAnswerFeedback(msg, onFeedback);
  const [hinting, setHinting] = useState(false);
  const [hintText, setHintText] = useState(msg.hint ?? "");
  // Keyboard: closing the hint box (Esc, Cancel, saved) puts focus back on its button.
  const hintButton = useRef<HTMLButtonElement | null>(null);
  const closeHint = () => {
    setHinting(false);
    setTimeout(() => hintButton.current?.focus(), 0);
  };

  // A stopped answer is not recorded by the core (nothing half-way), so it cannot be rated.
  const canRate = !!msg.turnId && !msg.streaming && !msg.stopped && !msg.error;
  return (
    <div className="msg assistant">
      <AnswerBubble msg={msg} onDecide={onDecide} />
      {!msg.streaming && (
        <AnswerActions
          msg={msg}
          canRate={canRate}
          saving={saving}
          hinting={hinting}
          hintButton={hintButton}
          showRegenerate={isLast && !busy}
          onThumb={thumb}
          onToggleHint={() => {
            setHintText(msg.hint ?? "");
            setHinting((h) => !h);
          }}
          onRegenerate={onRegenerate}
        />
      )}
      {msg.hint && !hinting && <HintShown hint={msg.hint} onRemove={() => void send({ hint: null }, { hint: null })} />}
      {hinting && (
        <HintForm
          text={hintText}
          saving={saving}
          onChange={setHintText}
          onSave={(h) => void send({ hint: h }, { hint: h }).then((ok) => ok && closeHint())}
          onClose={closeHint}
        />
      )}
      {error && (
        <div className="small error-text" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
