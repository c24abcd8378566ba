/** The attachment blocks as the chat edits them, and the files' share of the context (pure: no React, no DOM). */
import { attachmentBlock, splitAttachments } from "../../../../../electron/core/api/attachments.js";
import { defaultAnswerTokens } from "../../../../../electron/core/api/generationLimits.js";

/** Characters a token holds at the least in ordinary text (a cautious figure: prompts must fit). */
const CHARS_PER_TOKEN = 2.5;
/** The share of the context (less the answer's room) the attached files may take together. */
const FILES_SHARE = 0.6;

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

/** Characters all attached files may take in the prompt: a share of the served model's context. */
export function attachmentCharBudget(contextSize: number | null | undefined): number | undefined {
  if (!contextSize) return undefined;
  const room = contextSize - defaultAnswerTokens(contextSize) - 256;
  return Math.max(500, Math.floor(room * FILES_SHARE * CHARS_PER_TOKEN));
}
