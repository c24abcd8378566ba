import { useState } from "react";
import { Markdown } from "../../components/Markdown.js";
import type { AnswerEditView } from "../../../../electron/core/api/sessions.js";

/** The user's rewrite of an answer, shown under it: what it should have said, and that it teaches the assistant. */
export function AnswerEditShown({ edit }: { edit: AnswerEditView }) {
  return (
    <section className="answer-edit" aria-label="Your correction">
      <div className="answer-edit-head small">
        <strong>Your correction</strong>
        <span className="muted">
          {" "}
          · the assistant learns to answer like this (<a href="#/training">Training</a>)
        </span>
      </div>
      <Markdown text={edit.text} />
    </section>
  );
}

/** The box to rewrite an answer ("what it should have said"); Esc or Cancel closes it. */
export function AnswerEditForm({
  initial,
  saving,
  error,
  onSave,
  onClose,
}: {
  initial: string;
  saving: boolean;
  error: string | null;
  onSave: (text: string) => void;
  onClose: () => void;
}) {
  const [text, setText] = useState(initial);
  return (
    <form
      className="answer-edit-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (text.trim()) onSave(text.trim());
      }}
    >
      <label className="small" htmlFor="answer-edit-text">
        What should the answer have said? Your version is kept beside the original and teaches the assistant.
      </label>
      <textarea
        id="answer-edit-text"
        aria-label="Corrected answer"
        value={text}
        rows={Math.min(14, Math.max(4, text.split("\n").length + 1))}
        autoFocus
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.preventDefault();
            e.stopPropagation();
            onClose();
          }
        }}
      />
      {error && (
        <div className="small error-text" role="alert">
          {error}
        </div>
      )}
      <div className="actions">
        <button type="button" onClick={onClose}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={!text.trim() || text.trim() === initial.trim() || saving}>
          Save correction
        </button>
      </div>
    </form>
  );
}
