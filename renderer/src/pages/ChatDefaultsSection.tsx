import { useState } from "react";
import { builtInGeneration, loadDefaults, saveDefaults, type GenerationSettings } from "../api/generation.js";
import { useCore } from "../api/core.js";
import { GenerationForm } from "../components/GenerationForm.js";

/** Settings › Chat defaults: what a new chat starts with (each chat can change its own in its header). */
export function ChatDefaultsSection() {
  const { status } = useCore();
  const [value, setValue] = useState<GenerationSettings>(loadDefaults);
  const [saved, setSaved] = useState(false);
  const change = (g: GenerationSettings) => {
    setValue(g);
    saveDefaults(g);
    setSaved(true);
  };
  return (
    <section className="settings" aria-labelledby="chat-defaults-title">
      <h2 id="chat-defaults-title">Chat defaults</h2>
      <p className="small muted">
        New chats start with these; a chat's own settings are under "Chat settings" in its header. The system prompt is sent as the first message of each request, so it is
        recorded with the turn and learned from, as any client's would be. Kept in this browser.
      </p>
      <fieldset>
        <legend>Generation</legend>
        <GenerationForm value={value} onChange={change} contextSize={status?.model?.contextSize ?? null} />
      </fieldset>
      <div className="actions">
        <button type="button" className="link" onClick={() => change(builtInGeneration)}>
          Reset to the built-in defaults
        </button>
        {saved && (
          <span className="muted small" role="status">
            Saved.
          </span>
        )}
      </div>
    </section>
  );
}
