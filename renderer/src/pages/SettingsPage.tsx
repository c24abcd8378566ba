import { useCore } from "../api/core.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { ChatDefaultsSection } from "./ChatDefaultsSection.js";
import { MachineCheck } from "./settings/MachineCheck.js";
import { useSettingsForm } from "./settings/useSettingsForm.js";
import { LearningSection } from "./settings/LearningSection.js";
import { JudgeSection } from "./settings/JudgeSection.js";
import { OtherAppsSection } from "./settings/OtherAppsSection.js";
import { EmbeddingModelSection } from "./settings/EmbeddingModelSection.js";
import { ApiAccessSection } from "./settings/ApiAccessSection.js";

export function SettingsPage() {
  const { status } = useCore();
  const { loaded, form, set, save, saving, saved, dirty, error, unavailable } = useSettingsForm();

  return (
    <div className="page">
      <header className="page-head">
        <h1>Settings</h1>
      </header>
      {loaded.error && <LoadProblem error={loaded.error} what="Settings" onRetry={loaded.reload} />}
      {!form && !loaded.error && (
        <p className="muted" role="status">
          Loading settings…
        </p>
      )}
      {form && (
        <form
          className="settings"
          aria-label="Settings"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <LearningSection form={form} set={set} disabled={unavailable} />
          <JudgeSection form={form} set={set} disabled={unavailable} />
          <OtherAppsSection form={form} set={set} disabled={unavailable} />
          <EmbeddingModelSection form={form} set={set} disabled={unavailable} />

          <ChatDefaultsSection value={form.chatDefaults} onChange={(g) => set("chatDefaults", g)} contextSize={status?.model?.contextSize ?? null} />

          {error && <ErrorNote error={error} />}
          <div className="actions settings-save">
            {/* aria-disabled, not disabled, while there is nothing to save: the button keeps keyboard focus after a save. */}
            <button type="submit" className="primary" disabled={unavailable} aria-disabled={!dirty || saving}>
              {saving ? "Saving…" : "Save settings"}
            </button>
            {dirty ? (
              <span className="muted small">Unsaved changes</span>
            ) : saved ? (
              <span className="muted" role="status">
                Saved.
              </span>
            ) : null}
          </div>
        </form>
      )}

      <MachineCheck />

      <ApiAccessSection />
    </div>
  );
}
