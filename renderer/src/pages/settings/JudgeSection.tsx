import type { JudgeSource } from "../../../../electron/core/api/settings.js";
import { TermText } from "../../components/TermLabel.js";
import { terms } from "../../components/terms.js";
import type { Draft, SetField } from "./useSettingsForm.js";

function emptyJudge(kind: JudgeSource["kind"]): JudgeSource {
  if (kind === "gguf") return { kind, path: "" };
  if (kind === "endpoint") return { kind, baseUrl: "", model: "" };
  return { kind: "base" };
}

/** The Settings form's "Judge" fieldset: how many votes, and which model judges. */
export function JudgeSection({ form, set, disabled }: { form: Draft; set: SetField; disabled: boolean }) {
  return (
    <fieldset disabled={disabled}>
      <legend>Judge</legend>
      <label>
        <TermText t={terms.judgeVotes} value={form.judgeVotes} />
        <input type="number" min={1} max={15} value={form.judgeVotes} onChange={(e) => set("judgeVotes", Number(e.target.value))} />
      </label>
      <label className="span-2">
        <TermText t={terms.judgeSource} />
        <select value={form.judgeSource.kind} onChange={(e) => set("judgeSource", emptyJudge(e.target.value as JudgeSource["kind"]))}>
          <option value="base">The model you chat with, as originally downloaded</option>
          <option value="gguf">Another model file on this computer (GGUF)</option>
          <option value="endpoint">A server with an OpenAI-compatible API</option>
        </select>
      </label>
      {form.judgeSource.kind === "gguf" && (
        <label>
          Judge model file
          <input value={form.judgeSource.path} placeholder="/path/to/judge.gguf" onChange={(e) => set("judgeSource", { kind: "gguf", path: e.target.value })} />
        </label>
      )}
      {form.judgeSource.kind === "endpoint" && (
        <>
          <label>
            Judge server address
            <input
              value={form.judgeSource.baseUrl}
              placeholder="http://127.0.0.1:8000/v1"
              onChange={(e) => set("judgeSource", { ...(form.judgeSource as Extract<JudgeSource, { kind: "endpoint" }>), baseUrl: e.target.value })}
            />
          </label>
          <label>
            Judge model
            <input
              value={form.judgeSource.model}
              onChange={(e) => set("judgeSource", { ...(form.judgeSource as Extract<JudgeSource, { kind: "endpoint" }>), model: e.target.value })}
            />
          </label>
          <label>
            Judge API key
            <input
              type="password"
              value={form.judgeSource.apiKey ?? ""}
              onChange={(e) => set("judgeSource", { ...(form.judgeSource as Extract<JudgeSource, { kind: "endpoint" }>), apiKey: e.target.value || undefined })}
            />
          </label>
        </>
      )}
    </fieldset>
  );
}
