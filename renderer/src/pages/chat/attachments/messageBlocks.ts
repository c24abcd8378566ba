import { attachmentBlock, splitAttachments } from "../../../../../electron/core/api/attachments.js";

/** What the user typed in a sent message (its attached files' blocks left out): the text a question editor edits. */
export function typedOf(content: string): string {
  return content.includes("<attachment ") ? splitAttachments(content).typed : content;
}

/** An edited question keeps the files of the original: the new words, then the original's blocks. */
export function withAttachmentsOf(original: string, typed: string): string {
  if (!original.includes("<attachment ")) return typed;
  const blocks = splitAttachments(original).blocks.map((b) => attachmentBlock(b, b.text));
  return [typed.trim(), ...blocks].filter(Boolean).join("\n\n");
}
