import type { Settings } from "../../../../electron/core/api/settings.js";
import { TermText } from "../../components/TermLabel.js";
import { terms } from "../../components/terms.js";
import type { Draft, SetField } from "./useSettingsForm.js";

/** The Settings form's "Other apps" fieldset: whether turns from other apps are learned from. */
export function OtherAppsSection({ form, set, disabled }: { form: Draft; set: SetField; disabled: boolean }) {
  return (
    <fieldset disabled={disabled}>
      <legend>Other apps</legend>
      <label className="span-2">
        <TermText t={terms.outsideTurnType} />
        <select value={form.outsideDefaultTurnType} onChange={(e) => set("outsideDefaultTurnType", e.target.value as Settings["outsideDefaultTurnType"])}>
          <option value="side">Don't learn from them (side)</option>
          <option value="main">Learn from them (main)</option>
        </select>
      </label>
      <label className="check" title={terms.headerless.term}>
        <input type="checkbox" checked={form.headerlessTurnsMain} onChange={(e) => set("headerlessTurnsMain", e.target.checked)} />
        {terms.headerless.label} (OpenClaw without its plugin, any OpenAI SDK)
      </label>
    </fieldset>
  );
}
