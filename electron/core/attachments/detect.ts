/**
 * What an attached file is, from its bytes first and its name second: a browser's media type is
 * a guess from the extension, and a renamed file must not fool the reader. Text (plain,
 * Markdown, CSV, JSON, code) and PDF are read; images and other binary data are refused with the
 * reason.
 */
import path from "node:path";
import { UnsupportedAttachmentError, UnreadableAttachmentError } from "./errors.js";

export type DetectedKind = "text" | "pdf";

export interface Detected {
  kind: DetectedKind;
  /** the media type the view reports (api/sessions.ts AttachmentView.mediaType) */
  mediaType: string;
}

export const IMAGE_REASON =
  "Images need a vision-capable model; this app's runtime reads text only for now. Attach text, Markdown, code, CSV, JSON or a PDF with a text layer.";

const IMAGE_EXTENSIONS = new Set([".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".heic", ".heif", ".avif", ".ico", ".svg"]);

const CODE_EXTENSIONS = new Set(
  (
    ".ts .tsx .js .jsx .mjs .cjs .py .rb .go .rs .java .kt .kts .scala .c .h .cc .cpp .cxx .hpp .hh .cs .fs .swift .m .mm .php .pl .pm .lua .r .jl " +
    ".sh .bash .zsh .fish .ps1 .bat .cmd .sql .html .htm .css .scss .sass .less .vue .svelte .xml .yaml .yml .toml .ini .cfg .conf .env .gradle " +
    ".dart .ex .exs .erl .hs .ml .clj .cljs .elm .nim .zig .v .sol .proto .graphql .gql .tf .dockerfile .makefile .cmake .diff .patch"
  ).split(" "),
);
const CODE_NAMES = new Set(["makefile", "dockerfile", "cmakelists.txt", "gemfile", "rakefile", "procfile", "justfile"]);

/** Binary signatures the app names when it refuses them (the first bytes of the file). */
const SIGNATURES: { bytes: number[]; at?: number; what: string; image?: boolean }[] = [
  { bytes: [0x89, 0x50, 0x4e, 0x47], what: "a PNG image", image: true },
  { bytes: [0xff, 0xd8, 0xff], what: "a JPEG image", image: true },
  { bytes: [0x47, 0x49, 0x46, 0x38], what: "a GIF image", image: true },
  { bytes: [0x57, 0x45, 0x42, 0x50], at: 8, what: "a WebP image", image: true },
  { bytes: [0x42, 0x4d], what: "a BMP image", image: true },
  { bytes: [0x49, 0x49, 0x2a, 0x00], what: "a TIFF image", image: true },
  { bytes: [0x4d, 0x4d, 0x00, 0x2a], what: "a TIFF image", image: true },
  { bytes: [0x66, 0x74, 0x79, 0x70, 0x68, 0x65, 0x69], at: 4, what: "a HEIC image", image: true },
  { bytes: [0x66, 0x74, 0x79, 0x70, 0x61, 0x76, 0x69, 0x66], at: 4, what: "an AVIF image", image: true },
  { bytes: [0x50, 0x4b, 0x03, 0x04], what: "a ZIP archive (Word, Excel and PowerPoint files are ZIP archives too: save it as PDF or text)" },
  { bytes: [0xd0, 0xcf, 0x11, 0xe0], what: "an old Office document (save it as PDF or text)" },
  { bytes: [0x1f, 0x8b], what: "a gzip archive" },
  { bytes: [0x7f, 0x45, 0x4c, 0x46], what: "a program (ELF)" },
  { bytes: [0x4d, 0x5a], what: "a Windows program" },
  { bytes: [0x47, 0x47, 0x55, 0x46], what: "a GGUF model (import models on the Models page)" },
];

function startsWith(bytes: Uint8Array, sig: number[], at = 0): boolean {
  if (bytes.length < at + sig.length) return false;
  return sig.every((b, i) => bytes[at + i] === b);
}

/** "%PDF-" at the start; or within the first KiB of a file named .pdf (some writers put junk before it, and readers accept that). */
function isPdf(bytes: Uint8Array, ext: string): boolean {
  const head = Buffer.from(bytes.subarray(0, 1024)).toString("latin1");
  return head.startsWith("%PDF-") || (ext === ".pdf" && head.includes("%PDF-"));
}

/** The media type of a text file, from its name (the bytes were found to be text). */
function textMediaType(name: string): string {
  const base = path.basename(name).toLowerCase();
  const ext = path.extname(base);
  if (ext === ".md" || ext === ".markdown" || ext === ".mdx") return "text/markdown";
  if (ext === ".csv") return "text/csv";
  if (ext === ".tsv") return "text/tab-separated-values";
  if (ext === ".json" || ext === ".jsonl" || ext === ".ndjson") return "application/json";
  if (CODE_EXTENSIONS.has(ext) || CODE_NAMES.has(base)) return "text/x-code";
  return "text/plain";
}

/**
 * The kind and media type of `bytes` named `name`; throws UnsupportedAttachmentError for images
 * and binary data (with what it is, where known). Text must be UTF-8 (a BOM is fine) or UTF-16
 * with a BOM: decodeText reads it.
 */
export function detectType(bytes: Uint8Array, name: string): Detected {
  const ext = path.extname(name).toLowerCase();
  for (const s of SIGNATURES) {
    if (!startsWith(bytes, s.bytes, s.at)) continue;
    if (s.image) throw new UnsupportedAttachmentError(`${name} is ${s.what}. ${IMAGE_REASON}`, "image_not_supported");
    throw new UnsupportedAttachmentError(`${name} is ${s.what}, which the app cannot read. Attach text, Markdown, code, CSV, JSON or a PDF.`);
  }
  if (isPdf(bytes, ext)) return { kind: "pdf", mediaType: "application/pdf" };
  // An image by name whose bytes are no image we know (an SVG, a truncated file): still an image to the user.
  if (IMAGE_EXTENSIONS.has(ext)) throw new UnsupportedAttachmentError(`${name} is an image. ${IMAGE_REASON}`, "image_not_supported");
  if (ext === ".pdf") throw new UnreadableAttachmentError(`${name} is not a readable PDF (no PDF header in the file).`);
  if (looksBinary(bytes))
    throw new UnsupportedAttachmentError(`${name} holds binary data, not text: the app reads text, Markdown, code, CSV, JSON and PDF files.`);
  return { kind: "text", mediaType: textMediaType(name) };
}

/** NUL bytes or many control characters in the first 8 KiB (UTF-16 with a BOM is text). */
function looksBinary(bytes: Uint8Array): boolean {
  if (startsWith(bytes, [0xff, 0xfe]) || startsWith(bytes, [0xfe, 0xff])) return false;
  const n = Math.min(bytes.length, 8192);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const b = bytes[i];
    if (b === 0) return true;
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x0c && b !== 0x1b) control++;
  }
  return n > 0 && control / n > 0.1;
}

/** The text of a file detectType called text; throws UnreadableAttachmentError when it is not valid UTF-8 (or UTF-16 with a BOM). */
export function decodeText(bytes: Uint8Array, name: string): string {
  let encoding = "utf-8";
  if (startsWith(bytes, [0xff, 0xfe])) encoding = "utf-16le";
  else if (startsWith(bytes, [0xfe, 0xff])) encoding = "utf-16be";
  try {
    // The decoder drops the BOM it reads.
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch (err) {
    throw new UnreadableAttachmentError(`${name} is not UTF-8 text (save it as UTF-8 and attach it again).`, err);
  }
}
