/**
 * The text of an attached file: decoded text as it is, a PDF's text layer through pdfjs-dist
 * (Mozilla's PDF reader, maintained; its legacy build runs on Node 20), page by page.
 */
import { decodeText, type Detected } from "./detect.js";
import { UnreadableAttachmentError } from "./errors.js";

/** Pages read at most from one PDF (a 2,000-page manual's text is far past any context anyway). */
export const MAX_PDF_PAGES = 500;

export async function extractText(bytes: Uint8Array, name: string, type: Detected): Promise<string> {
  if (type.kind === "text") return normalize(decodeText(bytes, name));
  return normalize(await pdfText(bytes, name));
}

/** Line ends as \n; no NUL (the block format and the prompt want plain text). */
function normalize(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(/\0/g, "");
}

interface TextItemLike {
  str?: string;
  hasEOL?: boolean;
}

async function pdfText(bytes: Uint8Array, name: string): Promise<string> {
  // Loaded when a PDF is first attached: the reader is large and most sessions never need it.
  const pdfjs = await import("pdfjs-dist/legacy/build/pdf.mjs");
  // pdfjs takes ownership of (detaches) the buffer it is given: hand it a copy.
  const task = pdfjs.getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, verbosity: 0, useSystemFonts: false });
  let doc: Awaited<typeof task.promise>;
  try {
    doc = await task.promise;
  } catch (err) {
    const why = (err as Error)?.name === "PasswordException" ? "it is password-protected" : "it is damaged or not a PDF";
    throw new UnreadableAttachmentError(`${name} could not be read as a PDF: ${why}.`, err);
  }
  try {
    const pages: string[] = [];
    const count = Math.min(doc.numPages, MAX_PDF_PAGES);
    for (let i = 1; i <= count; i++) {
      const page = await doc.getPage(i);
      const content = await page.getTextContent();
      let text = "";
      for (const item of content.items as TextItemLike[]) {
        if (typeof item.str !== "string") continue;
        text += item.str + (item.hasEOL ? "\n" : "");
      }
      pages.push(text.trim());
      page.cleanup();
    }
    const text = pages.filter((p) => p.length > 0).join("\n\n");
    if (!/\S/.test(text))
      throw new UnreadableAttachmentError(
        `${name} has no text layer (a scanned or image-only PDF): the app reads a PDF's text, and this one has none. Run it through OCR first, or attach a text version.`,
      );
    return doc.numPages > count ? `${text}\n\n[the first ${count} of ${doc.numPages} pages]` : text;
  } catch (err) {
    if (err instanceof UnreadableAttachmentError) throw err;
    throw new UnreadableAttachmentError(`${name} could not be read as a PDF: ${(err as Error)?.message ?? String(err)}.`, err);
  } finally {
    await doc.destroy();
  }
}
