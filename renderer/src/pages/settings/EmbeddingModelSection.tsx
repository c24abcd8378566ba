import { useLive } from "../../api/core.js";
import type { Draft, SetField } from "./useSettingsForm.js";

/** Architectures of embedding GGUFs (BERT family): listed first, as what this setting is for. */
const EMBEDDING_ARCHS = new Set(["bert", "nomic-bert", "jina-bert-v2", "nomic-bert-moe", "modern-bert"]);
const OTHER = "__other__";

/**
 * The Settings form's "Embeddings" fieldset: which model /v1/embeddings answers from (the
 * `embeddingModelPath` setting): the model you chat with (default), an installed model, or any
 * GGUF file by its path. An embedding model runs beside the chat model with a context of its own.
 */
export function EmbeddingModelSection({ form, set, disabled }: { form: Draft; set: SetField; disabled: boolean }) {
  const models = useLive((c) => c.getJson("/api/models"), ["models"]);
  const installed = [...(models.data?.installed ?? [])]
    .filter((m) => m.path)
    .sort((a, b) => Number(EMBEDDING_ARCHS.has(b.architecture ?? "")) - Number(EMBEDDING_ARCHS.has(a.architecture ?? "")));
  const value = form.embeddingModelPath;
  const listed = value === null || installed.some((m) => m.path === value);
  return (
    <fieldset disabled={disabled}>
      <legend>Embeddings</legend>
      <label className="span-2">
        Model for embeddings (/v1/embeddings, used by other apps' memory search)
        <select
          value={value === null ? "" : listed ? value : OTHER}
          onChange={(e) => set("embeddingModelPath", e.target.value === "" ? null : e.target.value === OTHER ? (value ?? "") : e.target.value)}
        >
          <option value="">The model you chat with</option>
          {installed.map((m) => (
            <option key={m.id} value={m.path}>
              {m.name}
              {EMBEDDING_ARCHS.has(m.architecture ?? "") ? " (embedding model)" : ""}
            </option>
          ))}
          <option value={OTHER}>Another model file on this computer (GGUF)</option>
        </select>
      </label>
      {value !== null && !listed && (
        <label>
          Embedding model file
          <input value={value} placeholder="/path/to/nomic-embed-text-v1.5.Q8_0.gguf" onChange={(e) => set("embeddingModelPath", e.target.value)} />
        </label>
      )}
      <p className="muted small span-2">
        An embedding model (such as nomic-embed-text-v1.5 or bge-small-en-v1.5: <code>clawrl models pull nomic-embed-text-v1.5</code>) gives better search than
        the chat model and is loaded beside it, on first use, without slowing chat.
      </p>
    </fieldset>
  );
}
