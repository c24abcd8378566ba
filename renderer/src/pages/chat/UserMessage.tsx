import { useState } from "react";
import { PencilIcon, TrashIcon } from "../../components/Icons.js";
import { BranchSwitcher } from "./BranchSwitcher.js";
import { MessageContent } from "./attachments/AttachmentChips.js";
import { typedOf, withAttachmentsOf } from "./attachments/messageBlocks.js";
import type { DisplayMessage } from "./displayMessage.js";

/** One question: its bubble; Edit (the chat forks there), Delete, and its versions. */
export function UserMessage({
  msg,
  editing,
  busy,
  onEdit,
  onCancelEdit,
  onSend,
  onSwitch,
  onDelete,
}: {
  msg: DisplayMessage;
  editing: boolean;
  busy: boolean;
  onEdit: () => void;
  onCancelEdit: () => void;
  onSend: (text: string) => void;
  onSwitch: (turnId: string) => void;
  onDelete: () => void;
}) {
  return (
    <div className="msg user" data-turn={msg.rootTurnId ?? undefined}>
      {editing ? (
        <QuestionEditor text={typedOf(msg.content)} busy={busy} onSend={(t) => onSend(withAttachmentsOf(msg.content, t))} onCancel={onCancelEdit} />
      ) : (
        <div className="bubble">
          <MessageContent content={msg.content} />
        </div>
      )}
      {!editing && (
        <div className="msg-tools user-tools">
          {msg.branch && <BranchSwitcher branch={msg.branch} what="question" disabled={busy} onSwitch={onSwitch} />}
          <button
            type="button"
            className="icon"
            aria-label="Edit message"
            title="Edit: ask this again differently (the earlier version is kept)"
            disabled={busy}
            onClick={onEdit}
          >
            <PencilIcon />
          </button>
          {!!msg.deleteIds?.length && (
            <button
              type="button"
              className="icon"
              aria-label="Delete message"
              title="Delete this message and what follows it"
              disabled={busy}
              onClick={onDelete}
            >
              <TrashIcon />
            </button>
          )}
        </div>
      )}
    </div>
  );
}

/** The question's text in a box: Save & send asks it again (a new branch), Cancel or Esc leaves it as it was. */
function QuestionEditor({ text, busy, onSend, onCancel }: { text: string; busy: boolean; onSend: (text: string) => void; onCancel: () => void }) {
  const [value, setValue] = useState(text);
  const send = () => {
    const t = value.trim();
    if (t && !busy) onSend(t);
  };
  return (
    <form
      className="question-editor"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <textarea
        aria-label="Edit message"
        value={value}
        rows={Math.min(10, Math.max(2, value.split("\n").length))}
        autoFocus
        onFocus={(e) => e.currentTarget.setSelectionRange(e.currentTarget.value.length, e.currentTarget.value.length)}
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.preventDefault();
            e.stopPropagation();
            onCancel();
          } else if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      <div className="actions">
        <span className="small muted">The earlier version and its answers are kept: switch back with ‹ ›.</span>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={!value.trim() || busy}>
          Save &amp; send
        </button>
      </div>
    </form>
  );
}
