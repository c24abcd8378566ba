import { downloadFile, type DownloadProgress } from "./downloader.js";
import { hfAuthHeaders, resolveModelSource } from "./hfSource.js";
import { describeGguf, type InstalledModel, type ModelRegistry } from "./registry.js";

export interface PullOptions {
  onProgress?: (p: DownloadProgress) => void;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  retries?: number;
  backoffMs?: number;
}

/**
 * Downloads a catalog model or `hf:owner/repo/file.gguf` into the registry's folder: resumable,
 * checksum-verified, checked to be a GGUF before it is renamed into place, then registered.
 */
export async function pullModel(registry: ModelRegistry, spec: string, opts: PullOptions = {}): Promise<InstalledModel> {
  const env = opts.env ?? process.env;
  const source = resolveModelSource(spec, env);
  const dest = registry.downloadPath(source.file);
  const result = await downloadFile({
    url: source.url,
    dest,
    sha256: source.sha256,
    headers: hfAuthHeaders(env),
    onProgress: opts.onProgress,
    signal: opts.signal,
    retries: opts.retries,
    backoffMs: opts.backoffMs,
    validate: (file) => void describeGguf(file),
  });
  const d = describeGguf(result.path);
  return registry.add({
    id: source.id,
    path: result.path,
    origin: source.catalog ? "catalog" : "hf",
    name: source.catalog?.name ?? d.name,
    architecture: d.architecture,
    trainable: d.trainable,
    contextLength: d.contextLength,
    quantization: d.quantization,
    sizeBytes: result.bytes,
    sha256: result.sha256,
  });
}
