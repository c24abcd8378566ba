/**
 * Files attached to a chat message (issue 30). The core stores the file with its session and
 * extracts its text (POST /api/attachments); the UI puts that text into the user message as one
 * delimited block per file, which the model reads as it is and the UI turns back into a chip. The
 * block format is written here once: the core reads the ids back from recorded messages, the UI
 * renders chips from them.
 */
import type { AttachmentView } from "./sessions.js";

/** POST /api/attachments body: the file as dropped, base64, with the chat it goes to (null: a new chat, moved on its first turn). */
export interface AttachmentUploadRequest {
  name: string;
  /** the browser's type, if any; the core detects the type from the bytes and name */
  mediaType?: string;
  dataBase64: string;
  sessionId: string | null;
  /** characters of text the prompt can take for this file (the UI's share of the context); the core cuts to it */
  maxChars?: number;
}

/** The stored file and its text, cut to what fits (`attachment.truncated`). */
export interface AttachmentUploadReply {
  attachment: AttachmentView;
  /** the text that goes into the message (already cut) */
  text: string;
}

/** GET /api/attachments/:id: a stored file's view. */
export interface AttachmentReply {
  attachment: AttachmentView;
}

const OPEN = /<attachment id="([A-Za-z0-9_-]{1,64})" name="([^"\n]{0,256})"( truncated="true")?>\n/g;
const CLOSE = "\n</attachment>";

/** The block that carries a file's text in a message. */
export function attachmentBlock(a: Pick<AttachmentView, "id" | "name" | "truncated">, text: string): string {
  const name = a.name.replace(/["\n]/g, "_");
  return `<attachment id="${a.id}" name="${name}"${a.truncated ? ' truncated="true"' : ""}>\n${text}${CLOSE}`;
}

export interface ParsedAttachmentBlock {
  id: string;
  name: string;
  truncated: boolean;
  text: string;
}

/** A message's text split into what the user typed and the attached files' blocks. */
export function splitAttachments(content: string): { typed: string; blocks: ParsedAttachmentBlock[] } {
  const blocks: ParsedAttachmentBlock[] = [];
  let typed = "";
  let at = 0;
  OPEN.lastIndex = 0;
  for (let m = OPEN.exec(content); m; m = OPEN.exec(content)) {
    const end = content.indexOf(CLOSE, OPEN.lastIndex);
    if (end < 0) break;
    typed += content.slice(at, m.index);
    blocks.push({ id: m[1], name: m[2], truncated: m[3] !== undefined, text: content.slice(OPEN.lastIndex, end) });
    at = end + CLOSE.length;
    OPEN.lastIndex = at;
  }
  typed += content.slice(at);
  return { typed: typed.trim(), blocks };
}
