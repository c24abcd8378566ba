import { useState } from "react";
import type { PreferencesReply } from "../../../../electron/core/api/preferences.js";
import { messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { ErrorNote } from "../../components/Notices.js";

/** The preference settings (PATCH /api/settings), here where their effect shows. */
export function PreferenceSettings({ block, fromJudge, onSaved }: { block: PreferencesReply["block"]; fromJudge: boolean; onSaved: () => void }) {
  const { client } = useCore();
  const [error, setError] = useState<string | null>(null);
  const [budget, setBudget] = useState(String(block.budget));
  const save = async (patch: Record<string, unknown>) => {
    try {
      await client.patch("/api/settings", patch);
      setError(null);
      onSaved();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <details className="pref-settings">
      <summary>Settings</summary>
      <label>
        <input type="checkbox" checked={block.enabled} onChange={(e) => void save({ preferencesInPrompt: e.target.checked })} /> Add active preferences to the
        prompt
      </label>
      <label>
        <input
          type="checkbox"
          checked={block.outsideClients}
          disabled={!block.enabled}
          onChange={(e) => void save({ preferencesForOutsideClients: e.target.checked })}
        />{" "}
        Also for outside clients (OpenClaw, SDKs), not only this app's chat
      </label>
      <label>
        <input type="checkbox" checked={fromJudge} onChange={(e) => void save({ preferencesFromJudge: e.target.checked })} /> Make a preference of a hint the
        judge reads from your replies when it comes back on another turn
      </label>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save({ preferenceTokenBudget: Number(budget) });
        }}
      >
        <label>
          Token budget <input type="number" min={16} max={4096} value={budget} onChange={(e) => setBudget(e.target.value)} aria-label="Token budget" />
        </label>{" "}
        <button type="submit" disabled={Number(budget) === block.budget}>
          Save
        </button>
      </form>
      {error && <ErrorNote error={error} />}
    </details>
  );
}
