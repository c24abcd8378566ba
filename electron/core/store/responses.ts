import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import type { ChatMessage } from "../api/chatTypes.js";
import type { ResponseObject } from "../api/responses.js";

/** What a stored response keeps: the reply as sent, and the conversation a follow-up continues. */
export interface StoredResponse {
  response: ResponseObject;
  /** the conversation's messages without the request's instructions (they do not carry over), answer last */
  conversation: ChatMessage[];
  sessionId: string;
  turnId: string;
}

const ID = /^resp_[A-Za-z0-9_-]{1,100}$/;

// Read back at a process boundary (the file could be from another version, or damaged): checked, not trusted.
const storedSchema = z.object({
  response: z.looseObject({ id: z.string(), object: z.literal("response") }),
  conversation: z.array(z.looseObject({ role: z.enum(["system", "developer", "user", "assistant", "tool"]) })),
  sessionId: z.string(),
  turnId: z.string(),
});

/**
 * The Responses API's stored responses (`store`, the default), so `previous_response_id` can
 * continue a conversation across requests and restarts: one JSON file per response under the
 * data directory, each written atomically (temp file, fsync, rename), never rewritten.
 */
export class ResponseStore {
  constructor(private readonly dir: string) {}

  static isId(id: string): boolean {
    return ID.test(id);
  }

  private file(id: string): string {
    if (!ID.test(id)) throw new Error(`not a response id: ${id}`);
    return path.join(this.dir, `${id}.json`);
  }

  put(r: StoredResponse): void {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileAtomicSync(this.file(r.response.id), JSON.stringify(r), 0o600);
  }

  /** The stored response, or null when there is none (or its file cannot be read as one). */
  get(id: string): StoredResponse | null {
    if (!ID.test(id)) return null;
    let text: string;
    try {
      text = fs.readFileSync(this.file(id), "utf8");
    } catch {
      return null;
    }
    try {
      const parsed = storedSchema.safeParse(JSON.parse(text));
      // The checked shape's extra fields are the reply's own: the cast keeps its declared type.
      return parsed.success ? (parsed.data as unknown as StoredResponse) : null;
    } catch {
      return null;
    }
  }

  delete(id: string): boolean {
    if (!ID.test(id)) return false;
    try {
      fs.rmSync(this.file(id));
      return true;
    } catch {
      return false;
    }
  }
}
