import { useEffect, useState } from "react";
import { messageOf } from "../api/client.js";
import { useChatDefaults } from "../api/chatDefaults.js";
import { useCore } from "../api/core.js";
import { builtInGeneration, type GenerationSettings } from "../api/generation.js";
import { GenerationForm } from "../components/GenerationForm.js";
import { ErrorNote } from "../components/Notices.js";

/** Settings › Chat defaults: what a new chat starts with (each chat can change its own in its header). */
export function ChatDefaultsSection() {
  const { status } = useCore();
  const defaults = useChatDefaults();
  const [draft, setDraft] = useState<GenerationSettings | null>(null);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const value = draft ?? defaults.value;
  const dirty = draft !== null && JSON.stringify(draft) !== JSON.stringify(defaults.value);
  useEffect(() => {
    if (draft) setSaved(false);
  }, [draft]);

  const save = async () => {
    if (!draft || saving) return;
    setSaving(true);
    try {
      await defaults.save(draft);
      setDraft(null);
      setSaved(true);
      setError(null);
    } catch (e) {
      setError(`Could not save the chat defaults: ${messageOf(e)}`);
    } finally {
      setSaving(false);
    }
  };

  return (
    <form
      className="settings"
      aria-labelledby="chat-defaults-title"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h2 id="chat-defaults-title">Chat defaults</h2>
      <p className="small muted">
        New chats start with these; a chat's own settings are under "Chat settings" in its header. The system prompt is sent as the first message of each request, so it is
        recorded with the turn and learned from, as any client's would be.
      </p>
      <fieldset disabled={!defaults.loaded}>
        <legend>Generation</legend>
        <GenerationForm value={value} onChange={setDraft} contextSize={status?.model?.contextSize ?? null} />
      </fieldset>
      {error && <ErrorNote error={error} />}
      <div className="actions">
        <button type="submit" className="primary" aria-disabled={!dirty || saving}>
          {saving ? "Saving…" : "Save chat defaults"}
        </button>
        <button type="button" className="link" onClick={() => setDraft(builtInGeneration)}>
          Reset to the built-in defaults
        </button>
        {saved && (
          <span className="muted small" role="status">
            Saved.
          </span>
        )}
      </div>
    </form>
  );
}
