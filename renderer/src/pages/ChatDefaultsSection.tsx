import { builtInGeneration, type GenerationSettings } from "../api/generation.js";
import { GenerationForm } from "../components/GenerationForm.js";

/**
 * Settings › Chat defaults: what a new chat starts with (each chat can change its own in its
 * header). Part of the Settings form: saved with the page's one Save button.
 */
export function ChatDefaultsSection({
  value,
  onChange,
  contextSize,
}: {
  value: GenerationSettings;
  onChange: (g: GenerationSettings) => void;
  contextSize: number | null;
}) {
  return (
    <section className="chat-defaults" aria-labelledby="chat-defaults-title">
      <h2 id="chat-defaults-title">Chat defaults</h2>
      <p className="small muted">
        New chats start with these; a chat's own settings are under "Chat settings" in its header. The system prompt is sent as the first message of each
        request, so it is recorded with the turn and learned from, as any client's would be.
      </p>
      <fieldset>
        <legend>Generation</legend>
        <GenerationForm value={value} onChange={onChange} contextSize={contextSize} />
      </fieldset>
      <div className="actions">
        <button type="button" className="link" onClick={() => onChange(builtInGeneration)}>
          Reset chat defaults to the built-in ones
        </button>
      </div>
    </section>
  );
}
