/**
 * Attached files on disk, with their session:
 *
 *   <data dir>/attachments/<session dir>/<id>/<file name>   the file as dropped
 *   <data dir>/attachments/<session dir>/<id>/meta.json     its view (api/sessions.ts AttachmentView) and where it belongs
 *
 * <session dir> is the session id where it is a plain name (else `s-` and a hash of it), or
 * `unsorted` for a file attached to a chat that has no id yet (a new chat): its first turn moves
 * the file to its session (claim). Each file is written atomically (temp, fsync, rename), the
 * file first and meta.json last, so a listed attachment is always whole; a folder without
 * meta.json is a write that did not finish and is ignored.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import type { AttachmentView } from "../api/sessions.js";

export const UNSORTED = "unsorted";
const ID = /^att_[a-f0-9]{16}$/;

/** What meta.json holds. */
export interface StoredAttachment extends AttachmentView {
  /** the chat it belongs to (null: not yet sent in one) */
  sessionId: string | null;
  /** the file's name on disk, in the attachment's folder */
  file: string;
  createdAt: string;
}

/** A folder name for a session id: the id itself when it is a plain name, else a hash of it. */
export function sessionDirName(sessionId: string | null): string {
  if (sessionId === null) return UNSORTED;
  if (/^[A-Za-z0-9_-]{1,100}$/.test(sessionId) && sessionId !== UNSORTED) return sessionId;
  return `s-${crypto.createHash("sha256").update(sessionId).digest("hex").slice(0, 32)}`;
}

/** A file name safe on every platform: no folders, no control or reserved characters, at most 200 characters. */
export function safeFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  // eslint-disable-next-line no-control-regex -- control characters are what this removes from a file name
  let s = base.replace(/[\u0000-\u001f\u007f<>:"|?*]/g, "_").trim();
  s = s.replace(/^\.+/, "").replace(/[. ]+$/, "");
  if (s.length > 200) {
    const ext = path.extname(s).slice(0, 20);
    s = s.slice(0, 200 - ext.length) + ext;
  }
  return s || "file";
}

export class AttachmentStore {
  constructor(readonly dir: string) {}

  newId(): string {
    return `att_${crypto.randomBytes(8).toString("hex")}`;
  }

  /** Stores the file and its view; the view's name is the file's safe name. */
  save(bytes: Uint8Array, view: AttachmentView, sessionId: string | null): StoredAttachment {
    const folder = path.join(this.dir, sessionDirName(sessionId), view.id);
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    const file = safeFileName(view.name) === "meta.json" ? "meta.json.file" : safeFileName(view.name);
    writeFileAtomicSync(path.join(folder, file), bytes);
    const stored: StoredAttachment = { ...view, sessionId, file, createdAt: new Date().toISOString() };
    writeFileAtomicSync(path.join(folder, "meta.json"), JSON.stringify(stored, null, 2));
    return stored;
  }

  /** The stored attachment `id`: looked for in `sessionId`'s folder first, then unsorted, then everywhere. */
  get(id: string, sessionId?: string | null): StoredAttachment | null {
    if (!ID.test(id)) return null;
    const tried = new Set<string>();
    for (const d of sessionId === undefined ? [UNSORTED] : [sessionDirName(sessionId), UNSORTED]) {
      tried.add(d);
      const m = this.readMeta(path.join(this.dir, d, id));
      if (m) return m;
    }
    if (sessionId !== undefined) return null;
    for (const d of this.sessionDirs()) {
      if (tried.has(d)) continue;
      const m = this.readMeta(path.join(this.dir, d, id));
      if (m) return m;
    }
    return null;
  }

  /** The path of the stored file, or null. */
  filePath(a: StoredAttachment): string | null {
    const p = path.join(this.dir, sessionDirName(a.sessionId), a.id, a.file);
    if (fs.existsSync(p)) return p;
    // moved to its session after this view was read, or before its meta was rewritten
    const found = this.get(a.id);
    return found ? path.join(this.dir, sessionDirName(found.sessionId), found.id, found.file) : null;
  }

  /** Every attachment stored with the session, oldest first (the session's export lists them). */
  list(sessionId: string): StoredAttachment[] {
    const d = path.join(this.dir, sessionDirName(sessionId));
    const out: StoredAttachment[] = [];
    for (const id of readDir(d)) {
      const m = this.readMeta(path.join(d, id));
      if (m) out.push(m);
    }
    return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Moves unsorted attachments `ids` to the session (a new chat's first turn); those already there stay. */
  claim(sessionId: string, ids: readonly string[]): void {
    const target = sessionDirName(sessionId);
    if (target === UNSORTED) return;
    for (const id of ids) {
      if (!ID.test(id)) continue;
      const from = path.join(this.dir, UNSORTED, id);
      const meta = this.readMeta(from);
      if (!meta) continue;
      const to = path.join(this.dir, target, id);
      fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
      fs.renameSync(from, to);
      writeFileAtomicSync(path.join(to, "meta.json"), JSON.stringify({ ...meta, sessionId }, null, 2));
    }
  }

  /** Removes one attachment (a chip removed before sending); false when it is not there. */
  remove(id: string): boolean {
    const a = this.get(id);
    if (!a) return false;
    fs.rmSync(path.join(this.dir, sessionDirName(a.sessionId), id), { recursive: true, force: true });
    return true;
  }

  /** Removes every attachment of a deleted session. */
  removeSession(sessionId: string): void {
    const d = sessionDirName(sessionId);
    if (d !== UNSORTED) fs.rmSync(path.join(this.dir, d), { recursive: true, force: true });
  }

  /** Removes unsorted attachments older than `ms` (files attached to a new chat and never sent). */
  pruneUnsorted(ms: number, now = Date.now()): number {
    const d = path.join(this.dir, UNSORTED);
    let removed = 0;
    for (const id of readDir(d)) {
      const p = path.join(d, id);
      try {
        if (now - fs.statSync(p).mtimeMs < ms) continue;
        fs.rmSync(p, { recursive: true, force: true });
        removed++;
      } catch {
        // gone already
      }
    }
    return removed;
  }

  private sessionDirs(): string[] {
    return readDir(this.dir);
  }

  private readMeta(folder: string): StoredAttachment | null {
    try {
      const m = JSON.parse(fs.readFileSync(path.join(folder, "meta.json"), "utf8")) as StoredAttachment;
      return typeof m?.id === "string" && typeof m.name === "string" ? m : null;
    } catch {
      return null;
    }
  }
}

function readDir(d: string): string[] {
  try {
    return fs.readdirSync(d);
  } catch {
    return [];
  }
}
