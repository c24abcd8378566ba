import fs from "node:fs";
import path from "node:path";
import { findCatalogEntry } from "../../../models/catalog.js";
import type { DownloadProgress } from "../../../models/downloader.js";
import { pullModel } from "../../../models/pull.js";
import type { ModelRegistry } from "../../../models/registry.js";

/**
 * What `serve --model X` means: a GGUF path, an installed model's id, or a catalog id / hf:
 * reference (downloaded first, with progress). Without X: the model chosen with
 * `clawrl models use`, or none (the UI then offers the catalog).
 */
export async function resolveModelArg(registry: ModelRegistry, arg: string | undefined, onProgress?: (p: DownloadProgress) => void): Promise<string | null> {
  if (arg === undefined) return registry.active()?.path ?? null;
  if (fs.existsSync(arg) && fs.statSync(arg).isFile()) return path.resolve(arg);
  const installed = registry.get(arg);
  if (installed) {
    if (!fs.existsSync(installed.path)) throw new Error(`model '${arg}' is registered at ${installed.path}, but that file is gone`);
    return installed.path;
  }
  if (arg.startsWith("hf:") || findCatalogEntry(arg)) return (await pullModel(registry, arg, { onProgress })).path;
  throw new Error(`no model file, installed model or catalog id '${arg}' (see 'clawrl models list')`);
}
