import { findCatalogEntry, findEmbeddingCatalogEntry, type CatalogEntry, type EmbeddingCatalogEntry } from "./catalog.js";

/** Where a model file comes from, resolved to a URL on a Hugging Face-compatible endpoint. */
export interface ModelSource {
  /** Catalog id, or `hf:<owner>/<repo>/<file>` for any Hugging Face file. */
  id: string;
  repo: string;
  file: string;
  revision: string;
  url: string;
  sha256: string | null;
  catalog?: CatalogEntry | EmbeddingCatalogEntry;
}

/** `HF_ENDPOINT` as Hugging Face's own tools read it (a mirror, or a test server). */
export function hfEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return (env.HF_ENDPOINT || "https://huggingface.co").replace(/\/+$/, "");
}

export function hfAuthHeaders(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const token = env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN;
  return token ? { authorization: `Bearer ${token}` } : {};
}

function resolveUrl(repo: string, file: string, revision: string, env: NodeJS.ProcessEnv): string {
  const encFile = file.split("/").map(encodeURIComponent).join("/");
  return `${hfEndpoint(env)}/${repo}/resolve/${encodeURIComponent(revision)}/${encFile}`;
}

/**
 * Resolves a catalog id or `hf:<owner>/<repo>/<path/to/file.gguf>` (optionally `@revision`
 * after the repo: `hf:owner/repo@rev/file.gguf`). Throws a one-line error otherwise.
 */
export function resolveModelSource(spec: string, env: NodeJS.ProcessEnv = process.env): ModelSource {
  if (spec.startsWith("hf:")) {
    const m = /^hf:([^/\s]+)\/([^/@\s]+)(?:@([^/\s]+))?\/(.+\.gguf)$/i.exec(spec);
    if (!m) throw new Error(`not a Hugging Face file reference: '${spec}' (expected hf:<owner>/<repo>/<file>.gguf)`);
    const [, owner, name, rev, file] = m;
    if (file.split("/").some((p) => p === ".." || p === "")) throw new Error(`bad file path in '${spec}'`);
    const repo = `${owner}/${name}`;
    const revision = rev ?? "main";
    return { id: spec, repo, file, revision, url: resolveUrl(repo, file, revision, env), sha256: null };
  }
  const entry = findCatalogEntry(spec) ?? findEmbeddingCatalogEntry(spec);
  if (!entry) throw new Error(`unknown model '${spec}': not in the catalog (see 'clawrl models list'), and not hf:<owner>/<repo>/<file>.gguf`);
  return {
    id: entry.id,
    repo: entry.repo,
    file: entry.file,
    revision: entry.revision,
    url: resolveUrl(entry.repo, entry.file, entry.revision, env),
    sha256: entry.sha256,
    catalog: entry,
  };
}
