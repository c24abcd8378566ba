import { useRef, useState, type ReactNode } from "react";
import type { Decision } from "../../chat/agentLoop.js";
import { TrashIcon } from "../../components/Icons.js";
import { AnswerBubble } from "./AnswerBubble.js";
import { AnswerActions } from "./AnswerActions.js";
import { AnswerEditForm, AnswerEditShown } from "./AnswerEdit.js";
import { HintForm, HintShown } from "./AnswerHint.js";
import { BranchSwitcher } from "./BranchSwitcher.js";
import { useAnswerFeedback } from "./useAnswerFeedback.js";
import { useAnswerEdit } from "./useAnswerEdit.js";
import type { DisplayMessage } from "./displayMessage.js";

/** One answer: its bubble (under the user's correction, if any), and once written its feedback row, versions, hint and edit boxes. */
export function AssistantMessage({
  msg,
  isLast,
  busy,
  onRegenerate,
  onContinue,
  onFeedback,
  onDecide,
  onSwitch,
  onDelete,
}: {
  msg: DisplayMessage;
  isLast: boolean;
  busy: boolean;
  onRegenerate: () => void;
  /** asks for the rest of an answer cut by the token limit */
  onContinue: () => void;
  onFeedback: (p: Partial<DisplayMessage>) => void;
  onDecide: (callId: string, d: Decision) => void;
  onSwitch: (turnId: string) => void;
  onDelete: () => void;
}) {
  const { send, thumb, saving, error } = useAnswerFeedback(msg, onFeedback);
  const edit = useAnswerEdit(msg, onFeedback);
  const [hinting, setHinting] = useState(false);
  const [hintText, setHintText] = useState(msg.hint ?? "");
  // Keyboard: closing the hint box (Esc, Cancel, saved) puts focus back on its button.
  const hintButton = useRef<HTMLButtonElement | null>(null);
  const closeHint = () => {
    setHinting(false);
    setTimeout(() => hintButton.current?.focus(), 0);
  };

  // A stopped answer is kept (marked) but never trained on, so it cannot be rated or corrected.
  const canRate = !!msg.turnId && !msg.streaming && !msg.stopped && !msg.error;
  const bubble = <AnswerBubble msg={msg} onDecide={onDecide} />;
  return (
    <div className="msg assistant" data-turn={msg.rootTurnId ?? undefined}>
      {msg.answerEdit ? <OriginalAnswer>{bubble}</OriginalAnswer> : bubble}
      {msg.answerEdit && !edit.open && <AnswerEditShown edit={msg.answerEdit} />}
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
        >
          {msg.cut && isLast && !busy && (
            <button type="button" className="link" title="The answer reached its token limit: write the rest" onClick={onContinue}>
              Continue
            </button>
          )}
          {canRate && (
            <button type="button" className="link" aria-expanded={edit.open} onClick={() => edit.setOpen((o) => !o)}>
              {msg.answerEdit ? "Edit correction" : "Edit answer"}
            </button>
          )}
          {msg.branch && <BranchSwitcher branch={msg.branch} what="answer" disabled={busy} onSwitch={onSwitch} />}
          {!!msg.deleteIds?.length && (
            <button type="button" className="icon" aria-label="Delete answer" title="Delete this answer and what follows it" disabled={busy} onClick={onDelete}>
              <TrashIcon />
            </button>
          )}
        </AnswerActions>
      )}
      {edit.open && (
        <AnswerEditForm
          initial={msg.answerEdit?.text ?? msg.content}
          saving={edit.saving}
          error={edit.error}
          onSave={(t) => void edit.save(t)}
          onClose={edit.close}
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

/** The answer as the model wrote it, folded once the user has corrected it. */
function OriginalAnswer({ children }: { children: ReactNode }) {
  return (
    <details className="answer-original">
      <summary className="small">Original answer</summary>
      {children}
    </details>
  );
}
