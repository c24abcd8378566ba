import type { Settings } from "../../../../electron/core/api/settings.js";
import { TermText } from "../../components/TermLabel.js";
import { terms } from "../../components/terms.js";
import type { Draft, SetField } from "./useSettingsForm.js";

/** The Settings form's "Learning" fieldset: how and how much the assistant learns. */
export function LearningSection({ form, set, disabled }: { form: Draft; set: SetField; disabled: boolean }) {
  return (
    <fieldset disabled={disabled}>
      <legend>Learning</legend>
      <label className="span-2">
        <TermText t={terms.learningMethod} />
        <select value={form.learningMethod} onChange={(e) => set("learningMethod", e.target.value as Settings["learningMethod"])}>
          <option value="combined">From your ratings and your hints (combined)</option>
          <option value="binary">From your ratings only (binary RL)</option>
          <option value="opd">From your hints only (OPD)</option>
          <option value="topk">From your hints, top choices only (OPD top-k, advanced)</option>
        </select>
      </label>
      <label>
        <TermText t={terms.batchSize} value={form.batchSize} />
        <input type="number" min={1} max={1024} value={form.batchSize} onChange={(e) => set("batchSize", Number(e.target.value))} />
      </label>
      <label>
        <TermText t={terms.learningRate} value={form.learningRate} />
        <input type="number" step="any" min={0} value={form.learningRate} onChange={(e) => set("learningRate", Number(e.target.value))} />
      </label>
      <label title="Higher lets each lesson change more of the assistant, and uses more memory while learning.">
        <TermText t={terms.loraRank} value={form.loraRank} />
        <input type="number" min={1} max={256} value={form.loraRank} onChange={(e) => set("loraRank", Number(e.target.value))} />
      </label>
      <label title="How strongly training is pulled back toward the model it started from (the KL to the base model in the loss). 0 turns the anchor off.">
        <TermText t={terms.klBeta} value={form.klBeta} />
        <input type="number" step="any" min={0} max={10} value={form.klBeta} onChange={(e) => set("klBeta", Number(e.target.value))} />
      </label>
      <label title="Conversations never trained on: each new version is checked on them before it is used, and after.">
        <TermText t={terms.heldBackShare} />
        <input
          type="number"
          step="any"
          min={0}
          max={50}
          value={Math.round(form.heldBackShare * 1000) / 10}
          onChange={(e) => set("heldBackShare", Number(e.target.value) / 100)}
        />
      </label>
      <label className="span-2">
        <TermText t={terms.teacherSource} />
        <select value={form.teacherSource} onChange={(e) => set("teacherSource", e.target.value as Settings["teacherSource"])}>
          <option value="policy">The learning model, given your hint</option>
          <option value="base">The original model, given your hint (steadier)</option>
        </select>
      </label>
      <label className="check">
        <input type="checkbox" checked={form.autoLearn} onChange={(e) => set("autoLearn", e.target.checked)} />
        {terms.autoLearn.label}
      </label>
    </fieldset>
  );
}
