// Models as the pages name and describe them, over the contract's views (GET /api/models's
// ModelView, CatalogModelView; GET /api/status's served model).
import type { ModelView } from "../../../electron/core/api/models.js";
import type { StatusReply } from "../../../electron/core/api/status.js";
import { fileName, fmtBytes } from "../components/format.js";

/** A model's name for people: its own, unless that only names the architecture ("llama"): then its file's. */
export function modelName(m: { name: string; architecture: string | null; path: string | null }): string {
  if (m.name && m.name !== m.architecture) return m.name;
  return m.path ? fileName(m.path).replace(/\.gguf$/i, "") : m.name;
}

/** The served model's own name as /api/status gives it: its name, else its file's, else its id. */
export function servedName(m: NonNullable<StatusReply["model"]>): string {
  return m.name ?? (m.path ? fileName(m.path) : m.id);
}

/**
 * The active model: GET /api/models's when read, else the served one of /api/status (which has
 * no architecture or verdict; its GPU layers are the status's).
 */
export function activeModelOf(active: ModelView | null | undefined, status: StatusReply | null): ModelView | null {
  if (active) return active;
  const m = status?.model;
  if (!m) return null;
  return {
    id: m.id,
    name: servedName(m),
    path: m.path ?? "",
    sizeBytes: m.sizeBytes ?? null,
    architecture: null,
    trainable: null,
    quantization: m.quantization ?? null,
    contextSize: m.contextSize,
    gpuLayers: status.gpu?.layers,
    training: null,
  };
}

/** "1.1 MB · F32": what a model is, in a few words. */
export function modelFacts(m: { sizeBytes?: number | null; quantization?: string | null }): string {
  return [m.sizeBytes != null ? fmtBytes(m.sizeBytes) : null, m.quantization].filter(Boolean).join(" · ");
}
