/**
 * Attaching a file (POST /api/attachments): decode, check the size, find the type from the
 * bytes, extract the text, cut it to what the prompt can take, store the file with its session.
 */
import { z } from "zod";
import type { AttachmentUploadReply, AttachmentUploadRequest } from "../api/attachments.js";
import type { AttachmentView } from "../api/sessions.js";
import { InvalidInputError } from "../domainErrors.js";
import { detectType } from "./detect.js";
import { AttachmentTooLargeError } from "./errors.js";
import { extractText } from "./extract.js";
import { safeFileName, type AttachmentStore } from "./store.js";

/** Largest file attached (raw bytes). */
export const MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;
/** The body limit of POST /api/attachments: the base64 of the largest file (4/3), with room for the rest of the JSON. */
export const ATTACHMENT_BODY_LIMIT = Math.ceil((MAX_ATTACHMENT_BYTES * 4) / 3) + 1024 * 1024;
/** Characters kept when no model is loaded and the request names no maxChars. */
export const DEFAULT_MAX_CHARS = 24_000;

/** The characters a file's text may take when the request does not say: half of the served model's context, at 3 characters a token. */
export function defaultMaxChars(contextSize: number | null | undefined): number {
  return contextSize ? Math.max(1_000, Math.floor(contextSize * 0.5 * 3)) : DEFAULT_MAX_CHARS;
}

export const AttachmentUploadBody = z
  .object({
    name: z.string().trim().min(1).max(1024),
    mediaType: z.string().max(256).optional(),
    dataBase64: z.string(),
    sessionId: z.string().min(1).max(256).nullable(),
    maxChars: z.number().int().min(1).max(50_000_000).optional(),
  })
  .strict() satisfies z.ZodType<AttachmentUploadRequest>;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function formatMiB(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The file's bytes; an oversized file is refused from the length of its base64, before decoding. */
export function decodeUpload(name: string, dataBase64: string, limit = MAX_ATTACHMENT_BYTES): Buffer {
  const b64 = dataBase64.replace(/\s+/g, "");
  const size = Math.floor((b64.length * 3) / 4) - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
  if (size > limit) throw new AttachmentTooLargeError(`${name} is ${formatMiB(size)}; files up to ${formatMiB(limit)} can be attached.`);
  if (b64.length % 4 !== 0 || !BASE64.test(b64))
    throw new InvalidInputError("Invalid 'dataBase64': not base64.", { param: "dataBase64", code: "invalid_value" });
  return Buffer.from(b64, "base64");
}

/**
 * `text` cut to at most `max` characters: at the last line end in the final tenth when there is
 * one, never inside a surrogate pair. The closing tag of the attachment block is escaped inside
 * the text so the block stays whole (api/attachments.ts).
 */
export function cutText(text: string, max: number): { text: string; truncated: boolean } {
  const safe = text.replaceAll("</attachment>", "<\\/attachment>");
  if (safe.length <= max) return { text: safe, truncated: false };
  let end = max;
  const nl = safe.lastIndexOf("\n", end);
  if (nl > max * 0.9) end = nl;
  const c = safe.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return { text: safe.slice(0, end), truncated: true };
}

export interface AttachOptions {
  store: AttachmentStore;
  /** the served model's context (tokens), for the default maxChars; null when none is loaded */
  contextSize: () => number | null;
  maxBytes?: number;
}

/** Stores the file and answers its view and its (cut) text; throws the named errors of errors.ts. */
export async function attachFile(req: AttachmentUploadRequest, opts: AttachOptions): Promise<AttachmentUploadReply> {
  const name = safeFileName(req.name);
  const bytes = decodeUpload(name, req.dataBase64, opts.maxBytes ?? MAX_ATTACHMENT_BYTES);
  const type = detectType(bytes, name);
  const full = await extractText(bytes, name, type);
  const max = req.maxChars ?? defaultMaxChars(opts.contextSize());
  const cut = cutText(full, max);
  const view: AttachmentView = {
    id: opts.store.newId(),
    name,
    size: bytes.length,
    mediaType: type.mediaType,
    chars: full.length,
    truncated: cut.truncated,
    keptChars: cut.text.length,
  };
  const stored = opts.store.save(bytes, view, req.sessionId);
  return { attachment: viewOf(stored), text: cut.text };
}

/** The contract's view of a stored attachment (meta.json less where it lives). */
export function viewOf(a: AttachmentView): AttachmentView {
  const { id, name, size, mediaType, chars, truncated, keptChars } = a;
  return { id, name, size, mediaType, chars, truncated, keptChars };
}
