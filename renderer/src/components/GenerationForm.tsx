import { useId } from "react";
import { defaultMaxTokens, limits, type GenerationSettings } from "../api/generation.js";

/**
 * System prompt, temperature, top-p, max tokens and tool steps: the chat's own settings (chat header) or
 * the defaults (Settings). Max tokens left empty means "sized to the model".
 */
export function GenerationForm({
  value,
  onChange,
  contextSize,
}: {
  value: GenerationSettings;
  onChange: (g: GenerationSettings) => void;
  contextSize: number | null;
}) {
  const id = useId();
  const set = (patch: Partial<GenerationSettings>) => onChange({ ...value, ...patch });
  const auto = defaultMaxTokens(contextSize);
  return (
    <div className="generation-form">
      <label className="generation-system" htmlFor={`${id}-system`}>
        System prompt
        <textarea
          id={`${id}-system`}
          rows={3}
          maxLength={limits.systemPromptChars}
          placeholder="e.g. You are a concise assistant. Answer in plain English."
          value={value.systemPrompt}
          onChange={(e) => set({ systemPrompt: e.target.value })}
        />
      </label>
      <label htmlFor={`${id}-temp`}>
        Temperature <span className="muted small">{value.temperature.toFixed(2)}</span>
        <input
          id={`${id}-temp`}
          type="range"
          min={limits.temperature.min}
          max={limits.temperature.max}
          step={limits.temperature.step}
          value={value.temperature}
          onChange={(e) => set({ temperature: Number(e.target.value) })}
        />
      </label>
      <label htmlFor={`${id}-topp`}>
        Top-p <span className="muted small">{value.topP.toFixed(2)}</span>
        <input
          id={`${id}-topp`}
          type="range"
          min={limits.topP.min}
          max={limits.topP.max}
          step={limits.topP.step}
          value={value.topP}
          onChange={(e) => set({ topP: Number(e.target.value) })}
        />
      </label>
      <label htmlFor={`${id}-max`}>
        Max tokens
        <input
          id={`${id}-max`}
          type="number"
          min={limits.maxTokens.min}
          max={limits.maxTokens.max}
          placeholder={`Auto (${auto})`}
          value={value.maxTokens ?? ""}
          onChange={(e) => {
            const n = e.target.value === "" ? null : Math.round(Number(e.target.value));
            set({ maxTokens: n !== null && Number.isFinite(n) && n > 0 ? Math.min(n, limits.maxTokens.max) : null });
          }}
        />
        <span className="small muted">
          {value.maxTokens === null
            ? `Sized to the model: ${auto} tokens${contextSize ? ` of its ${contextSize.toLocaleString()}-token context` : ""}.`
            : "Longer answers stop here."}
        </span>
      </label>
      <label htmlFor={`${id}-steps`}>
        Tool steps per answer
        <input
          id={`${id}-steps`}
          type="number"
          min={limits.toolSteps.min}
          max={limits.toolSteps.max}
          value={value.toolSteps}
          onChange={(e) => {
            const n = Math.round(Number(e.target.value));
            if (Number.isFinite(n) && n >= limits.toolSteps.min) set({ toolSteps: Math.min(n, limits.toolSteps.max) });
          }}
        />
        <span className="small muted">How many times the assistant may use a tool before it must answer in words.</span>
      </label>
    </div>
  );
}
