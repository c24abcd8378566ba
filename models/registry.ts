import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { writeFileAtomicSync } from "../common/fs/atomicFile.js";
import { readGguf } from "./gguf/reader.js";
import { assertLoadableGguf } from "./gguf/loadable.js";
import { summarizeGguf } from "./gguf/summary.js";
import { loadCatalog, loadEmbeddingCatalog } from "./catalog.js";

const installedSchema = z.object({
  id: z.string(),
  path: z.string(),
  origin: z.enum(["catalog", "hf", "import"]),
  name: z.string(),
  architecture: z.string(),
  trainable: z.boolean(),
  contextLength: z.number().nullable(),
  /** llama.cpp's name for the file type (e.g. "Q4_K_M"), else the main weight type; absent in older indexes */
  quantization: z.string().nullable().optional(),
  sizeBytes: z.number(),
  sha256: z.string().nullable(),
  addedAt: z.string(),
});
export type InstalledModel = z.infer<typeof installedSchema>;

const indexSchema = z.object({ active: z.string().nullable(), models: z.array(installedSchema) });
type Index = z.infer<typeof indexSchema>;

/**
 * A model file's one name for people, wherever it shows (the Models page, the chat's picker, the
 * first run, /api/status): the catalog's name for a catalog file, else the name in its header
 * unless that only names the architecture ("llama"), else the file's name without .gguf.
 */
export function modelDisplayName(m: { name?: string | null; architecture?: string | null; path: string }): string {
  const base = path.basename(m.path);
  const listed = loadCatalog().find((c) => path.basename(c.file) === base) ?? loadEmbeddingCatalog().find((c) => path.basename(c.file) === base);
  if (listed) return listed.name;
  const own = m.name?.trim();
  if (own && own !== m.architecture) return own;
  return base.replace(/\.gguf$/i, "");
}

/** Encoder architectures llama.cpp runs for embeddings only (bert and its kin): never a chat model. */
const EMBEDDING_ARCHS = new Set(["bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "modern-bert", "neo-bert", "t5encoder"]);

/** Whether an installed model is an embedding model (the catalog's `embeddingModels`, or an encoder architecture): for /v1/embeddings, not chat. */
export function isEmbeddingModel(m: { id: string; architecture: string | null; path: string }): boolean {
  const base = path.basename(m.path);
  return (
    (m.architecture !== null && EMBEDDING_ARCHS.has(m.architecture)) || loadEmbeddingCatalog().some((e) => e.id === m.id || path.basename(e.file) === base)
  );
}

/** What the GGUF says about itself; throws GgufError (naming the file) for anything invalid. */
export function describeGguf(file: string) {
  const s = summarizeGguf(readGguf(file));
  if (s.kind !== "model") throw new Error(`${file}: this is ${s.kind === "lora-adapter" ? "a LoRA adapter" : "not a model"}, not something to serve`);
  return {
    architecture: s.architecture ?? "unknown",
    name: modelDisplayName({ name: s.name, architecture: s.architecture, path: file }),
    contextLength: s.contextLength,
    quantization: s.fileType ?? s.mainType,
    trainable: s.trainerSupported,
    sizeBytes: s.fileSize,
  };
}

/**
 * The models this user has: downloaded ones live in `<data>/models/`, imported ones stay where
 * they are. The index is a small JSON file written atomically.
 */
export class ModelRegistry {
  readonly indexFile: string;

  constructor(readonly dir: string) {
    this.indexFile = path.join(dir, "index.json");
  }

  private read(): Index {
    try {
      return indexSchema.parse(JSON.parse(fs.readFileSync(this.indexFile, "utf8")));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { active: null, models: [] };
      throw new Error(`${this.indexFile} is damaged (${(err as Error).message.split("\n")[0]}); move it away to start a fresh model list`, { cause: err });
    }
  }

  private write(index: Index): void {
    fs.mkdirSync(this.dir, { recursive: true });
    writeFileAtomicSync(this.indexFile, JSON.stringify(index, null, 2), 0o644);
  }

  list(): InstalledModel[] {
    return this.read().models;
  }

  /** The installed models and the chosen one, from one read of the index. */
  snapshot(): { models: InstalledModel[]; active: InstalledModel | null } {
    const index = this.read();
    return { models: index.models, active: index.models.find((m) => m.id === index.active) ?? null };
  }

  get(id: string): InstalledModel | undefined {
    return this.read().models.find((m) => m.id === id);
  }

  /** Where a download of `file` goes. */
  downloadPath(file: string): string {
    return path.join(this.dir, path.basename(file));
  }

  add(model: Omit<InstalledModel, "addedAt">): InstalledModel {
    const index = this.read();
    const entry = { ...model, addedAt: new Date().toISOString() };
    index.models = [...index.models.filter((m) => m.id !== model.id), entry];
    this.write(index);
    return entry;
  }

  /** Imports a local GGUF (kept where it is), after checking it. */
  importFile(file: string): InstalledModel {
    const abs = path.resolve(file);
    // One answer for a path that is missing, unreadable or not a GGUF: an import does not tell
    // its caller what else lies on the disk. A GGUF that is damaged gets the reader's reason.
    if (!startsWithGgufMagic(abs)) throw new Error(`cannot import ${file}: there is no readable GGUF model file at that path`);
    assertLoadableGguf(abs); // the same check every load makes (UnloadableGgufError, 422 over HTTP)
    const d = describeGguf(abs);
    return this.add({
      id: `local:${path.basename(abs, ".gguf")}`,
      path: abs,
      origin: "import",
      name: d.name,
      architecture: d.architecture,
      trainable: d.trainable,
      contextLength: d.contextLength,
      quantization: d.quantization,
      sizeBytes: d.sizeBytes,
      sha256: null,
    });
  }

  /** Removes a model from the list; deletes its file only if we downloaded it. */
  remove(id: string): InstalledModel {
    const index = this.read();
    const m = index.models.find((x) => x.id === id);
    if (!m) throw new Error(`no installed model '${id}' (see 'clawrl models list')`);
    index.models = index.models.filter((x) => x.id !== id);
    if (index.active === id) index.active = null;
    this.write(index);
    if (m.origin !== "import") fs.rmSync(m.path, { force: true });
    return m;
  }

  setActive(id: string): InstalledModel {
    const index = this.read();
    const m = index.models.find((x) => x.id === id);
    if (!m) throw new Error(`no installed model '${id}'`);
    index.active = id;
    this.write(index);
    return m;
  }

  active(): InstalledModel | null {
    return this.snapshot().active;
  }
}

/** Whether `file` is a regular file this process can read that starts with GGUF's magic. */
function startsWithGgufMagic(file: string): boolean {
  let fd: number | null = null;
  try {
    if (!fs.statSync(file).isFile()) return false;
    fd = fs.openSync(file, "r");
    const b = Buffer.alloc(4);
    return fs.readSync(fd, b, 0, 4, 0) === 4 && b.toString("latin1") === "GGUF";
  } catch {
    return false;
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}
