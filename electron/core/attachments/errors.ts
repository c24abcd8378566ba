/**
 * Why an attached file was refused, in the user's words (the chat shows the message as it is).
 * server/errors.ts maps each class to its status: too large 413, a type the app cannot read 415,
 * a file of a readable type whose text cannot be had (a broken PDF, a scan without a text layer) 422.
 */
import { DomainError } from "../domainErrors.js";

/** The file is over the size limit. */
export class AttachmentTooLargeError extends DomainError {
  constructor(message: string) {
    super(message, { code: "file_too_large", param: "dataBase64" });
  }
}

/** A type the app does not read: an image (no vision-capable runtime yet), an archive, a program, other binary data. */
export class UnsupportedAttachmentError extends DomainError {
  constructor(message: string, code: "image_not_supported" | "unsupported_file_type" = "unsupported_file_type") {
    super(message, { code, param: "dataBase64" });
  }
}

/** A type the app reads, but this file's text cannot be had (a damaged or encrypted PDF, a PDF with no text layer, broken text). */
export class UnreadableAttachmentError extends DomainError {
  constructor(message: string, cause?: unknown) {
    super(message, { code: "unreadable_file", param: "dataBase64", cause });
  }
}
