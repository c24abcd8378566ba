import { useState, type KeyboardEvent, type RefObject } from "react";
import { AttachButton } from "./attachments/AttachButton.js";
import { AttachmentChips } from "./attachments/AttachmentChips.js";
import { useAttachments } from "./attachments/useAttachments.js";

/**
 * The message box with Send (Stop while an answer streams); Enter sends, Shift+Enter makes a new
 * line, ↑ in an empty box edits the last question. Without a model it waits, with a hint on where to get one.
 */
export function Composer({
  inputRef,
  busy,
  noModel,
  emptyChat,
  onSend,
  onStop,
  onEditLast,
}: {
  inputRef: RefObject<HTMLTextAreaElement | null>;
  busy: boolean;
  noModel: boolean;
  emptyChat: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  /** ↑ in the empty box: edit the last question */
  onEditLast?: () => void;
}) {
  const [input, setInput] = useState("");
  const att = useAttachments();

  const send = () => {
    const text = att.compose(input);
    if (!text || busy || noModel || att.uploading) return;
    setInput("");
    att.clear();
    onSend(text);
  };

  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    } else if (e.key === "ArrowUp" && !input && !busy && onEditLast) {
      e.preventDefault();
      onEditLast();
    }
  };

  return (
    <>
      <AttachmentChips att={att} />
      <form
        className="composer"
        onSubmit={(e) => {
          e.preventDefault();
          send();
        }}
      >
        <AttachButton att={att} disabled={noModel} />
        <textarea
          ref={inputRef}
          aria-label="Message"
          aria-describedby={noModel ? "composer-no-model" : undefined}
          placeholder={noModel ? "Choose a model first" : "Message ClawRL (Enter sends, Shift+Enter new line)"}
          rows={1}
          value={input}
          disabled={noModel}
          onChange={(e) => setInput(e.target.value)}
          onKeyDown={onKey}
          onPaste={att.onPaste}
          autoFocus
        />
        {busy ? (
          <button type="button" className="danger" onClick={onStop} title="Stop (Esc)">
            Stop
          </button>
        ) : (
          <button type="submit" className="primary" disabled={(!input.trim() && att.ready === 0) || att.uploading || noModel}>
            Send
          </button>
        )}
      </form>
      {noModel && (
        <p className="small muted composer-hint" id="composer-no-model">
          No model is loaded yet: download or import one{" "}
          {emptyChat ? (
            "above"
          ) : (
            <>
              on the <a href="#/models">Models</a> page
            </>
          )}{" "}
          to start chatting.
        </p>
      )}
    </>
  );
}
