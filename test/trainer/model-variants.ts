/** Variants of a GGUF file for trainer tests: same tensors and metadata with edits. */
import path from "node:path";
import { readGguf, readTensorBytes } from "../../models/gguf/reader.js";
import type { GgufMetaValue } from "../../models/gguf/types.js";
import { writeGguf } from "../../models/gguf/writer.js";

export function ggufVariant(src: string, dir: string, name: string, edit: { dropTensors?: string[]; metadata?: Record<string, GgufMetaValue> }): string {
  const f = readGguf(src);
  const drop = new Set(edit.dropTensors ?? []);
  const metadata = new Map(f.metadata);
  metadata.delete("general.alignment");
  for (const [k, v] of Object.entries(edit.metadata ?? {})) metadata.set(k, v);
  const tensors = f.tensors.filter((t) => !drop.has(t.name)).map((t) => ({ name: t.name, dims: t.dims, type: t.type, data: readTensorBytes(f, t) }));
  const out = path.join(dir, name);
  writeGguf(out, { metadata: [...metadata], tensors, alignment: f.alignment });
  return out;
}
