import type { GenerationSettings } from "../../api/generation.js";
import { SidebarIcon, SlidersIcon } from "../../components/Icons.js";
import { GenerationForm } from "../../components/GenerationForm.js";
import { ModelPicker } from "../../components/ModelPicker.js";
import { ChatMenu } from "./ChatMenu.js";

/** The conversation's header: the chats toggle, the model picker, the Chat settings toggle and the chat's menu. */
export function ChatHeader({
  sessionId,
  showSessions,
  showGen,
  ownGen,
  onToggleSessions,
  onToggleGen,
}: {
  sessionId: string | null;
  showSessions: boolean;
  showGen: boolean;
  ownGen: boolean;
  onToggleSessions: () => void;
  onToggleGen: () => void;
}) {
  return (
    <header className="chat-header">
      <button
        type="button"
        className="icon sessions-toggle"
        aria-label="Chats"
        title="Chats"
        aria-expanded={showSessions}
        aria-controls="chat-sessions"
        onClick={onToggleSessions}
      >
        <SidebarIcon />
      </button>
      <ModelPicker />
      <button
        type="button"
        className={ownGen ? "gen-toggle on" : "gen-toggle"}
        aria-expanded={showGen}
        aria-controls="chat-generation"
        onClick={onToggleGen}
        title="System prompt, temperature, max tokens for this chat"
      >
        <SlidersIcon /> <span>Chat settings</span>
      </button>
      <ChatMenu sessionId={sessionId} />
    </header>
  );
}

/** This chat's own generation settings (or the defaults it uses), with Use the defaults and Done. */
export function ChatSettingsPanel({
  gen,
  ownGen,
  genError,
  contextSize,
  onChange,
  onDone,
}: {
  gen: GenerationSettings;
  ownGen: boolean;
  genError: string | null;
  contextSize: number | null;
  onChange: (g: GenerationSettings | null) => void;
  onDone: () => void;
}) {
  return (
    <section className="chat-generation" id="chat-generation" aria-label="Chat settings">
      <GenerationForm value={gen} onChange={(g) => onChange(g)} contextSize={contextSize} />
      <div className="actions">
        <span className="small muted">{ownGen ? "This chat has its own settings." : "This chat uses the defaults from Settings."}</span>
        {genError && (
          <span className="small error-text" role="alert">
            {genError}
          </span>
        )}
        {ownGen && (
          <button type="button" className="link" onClick={() => onChange(null)}>
            Use the defaults
          </button>
        )}
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </section>
  );
}
