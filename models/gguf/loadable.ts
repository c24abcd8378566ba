/**
 * The one check every GGUF passes before node-llama-cpp sees it (served model, model switch,
 * import, judge GGUF, adapters loaded into the engine). node-llama-cpp 3.22.1's own header
 * reader trusts the counts in the header: a file claiming 2^62 tensors makes it loop and grow
 * memory without end. `readGguf` checks every count, string length, array length and tensor
 * extent against the file's length (and caps absurd ones) and fails in milliseconds with a
 * GgufError, so a file that passes it has a header llama.cpp can read in bounded time.
 */
import fs from "node:fs";
import { metaArray, metaString, readGguf, type GgufFile } from "./reader.js";
import { GgufError } from "./types.js";

/** A GGUF refused before loading. `statusCode` 422: the API's model layer answers with it. */
export class UnloadableGgufError extends GgufError {
  readonly statusCode = 422;
  readonly code = "unloadable_gguf";
  constructor(
    file: string,
    readonly problem: string,
  ) {
    super(file, `refused before loading, not a sound GGUF file: ${problem}`);
    this.name = "UnloadableGgufError";
  }
}

interface Facts {
  /** the file's identity when checked: a changed file is checked again */
  size: number;
  mtimeMs: number;
  /** UTF-8 length of the longest vocabulary entry (null: the file has no vocabulary) */
  maxTokenBytes: number | null;
  tokenizerModel: string | null;
}

/** Files that passed, by path (a model is loaded again on every switch back; its header is read once). */
const passed = new Map<string, Facts>();

/**
 * Throws UnloadableGgufError (naming the file and the problem) unless `file` is a GGUF whose
 * header, metadata and tensor table are consistent with its length. Synchronous and bounded:
 * positional reads of the header only (tens of ms for a real model's vocabulary).
 */
export function assertLoadableGguf(file: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (e) {
    throw new UnloadableGgufError(file, (e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message);
  }
  if (!st.isFile()) throw new UnloadableGgufError(file, "not a regular file");
  const known = passed.get(file);
  if (known && known.size === st.size && known.mtimeMs === st.mtimeMs) return;
  let g: GgufFile;
  try {
    g = readGguf(file);
  } catch (e) {
    if (e instanceof GgufError) throw new UnloadableGgufError(file, e.message.startsWith(`${file}: `) ? e.message.slice(file.length + 2) : e.message);
    throw e;
  }
  passed.set(file, { size: st.size, mtimeMs: st.mtimeMs, maxTokenBytes: longestToken(g), tokenizerModel: metaString(g, "tokenizer.ggml.model") ?? null });
  if (passed.size > 64) passed.delete(passed.keys().next().value!);
}

function longestToken(g: GgufFile): number | null {
  const tokens = metaArray(g, "tokenizer.ggml.tokens");
  if (!tokens || tokens.length === 0) return null;
  let max = 0;
  for (const t of tokens) if (typeof t === "string") max = Math.max(max, Buffer.byteLength(t, "utf8"));
  return max > 0 ? max : null;
}

/**
 * At most how many bytes of prompt text one token of this model covers: the UTF-8 length of
 * its longest vocabulary entry. Vocabulary entries are never shorter than the text they stand
 * for in the tokenizers llama.cpp runs for chat models (SentencePiece writes a space as the
 * 3-byte '▁' and a byte as '<0xNN>'; byte-level BPE writes each byte as a 1–2 byte character).
 * Tokenizers that normalize text (WordPiece, Unigram) may shrink it, so they get 4× room. Null
 * when unknown (no vocabulary, or the file could not be read): callers then skip the bound.
 */
export function maxTokenBytes(file: string): number | null {
  let f = passed.get(file);
  if (!f) {
    try {
      assertLoadableGguf(file);
    } catch {
      return null;
    }
    f = passed.get(file);
  }
  if (!f?.maxTokenBytes) return null;
  const exact = f.tokenizerModel === "llama" || f.tokenizerModel === "gpt2";
  return exact ? f.maxTokenBytes : f.maxTokenBytes * 4;
}
