/** An answer's saved hint, with Remove hint. */
export function HintShown({ hint, onRemove }: { hint: string; onRemove: () => void }) {
  return (
    <div className="hint-shown">
      <span className="small muted">Your hint:</span> {hint}
      <button type="button" className="link small" onClick={onRemove}>
        Remove hint
      </button>
      {/* A hint becomes a standing preference (electron/core/preferences/): the next answer already follows it. */}
      <div className="small muted hint-applies">
        Applies from your next message as a <a href="#/preferences">preference</a>.
      </div>
    </div>
  );
}

/** The box to write (or edit) an answer's hint; Esc or Cancel closes it. */
export function HintForm({
  text,
  saving,
  onChange,
  onSave,
  onClose,
}: {
  text: string;
  saving: boolean;
  onChange: (text: string) => void;
  onSave: (hint: string) => void;
  onClose: () => void;
}) {
  return (
    <form
      className="hint-form"
      onSubmit={(e) => {
        e.preventDefault();
        const h = text.trim();
        if (!h) return;
        onSave(h);
      }}
    >
      <input
        aria-label="Hint"
        placeholder="What should the assistant have done instead?"
        maxLength={500}
        value={text}
        autoFocus
        onChange={(e) => onChange(e.target.value)}
        onKeyDown={(e) => e.key === "Escape" && onClose()}
      />
      <button type="submit" className="primary" disabled={!text.trim() || saving}>
        Save hint
      </button>
      <button type="button" onClick={onClose}>
        Cancel
      </button>
      <div className="small muted hint-applies">Applies from your next message.</div>
    </form>
  );
}
