/**
 * The one atomic file writer of the project, shared by the core, the shell, the trainer, models/
 * and the GGUF writer. It lives in common/, which imports nothing of theirs, so any of them can
 * reach it without an import running the wrong way.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Replaces `file` with what `write` writes to the open descriptor, so that a crash at any point
 * leaves either the old content or the new, never a mix: write a temp file in the same directory,
 * fsync it, rename it over the target, fsync the directory (so the rename itself survives a
 * power cut). On any error the temp file is removed and the target is untouched.
 */
export function writeFileAtomicWith<T>(file: string, mode: number, write: (fd: number) => T): T {
  const dir = path.dirname(path.resolve(file));
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`);
  const fd = fs.openSync(tmp, "w", mode);
  let result: T;
  try {
    result = write(fd);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dir);
  return result;
}

/** Replaces `file` with `data` atomically (see writeFileAtomicWith). */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, mode = 0o600): void {
  writeFileAtomicWith(file, mode, (fd) => fs.writeFileSync(fd, data));
}

/** fsync a directory; platforms that cannot open directories (Windows) skip it. */
export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EPERM" && code !== "EINVAL" && code !== "EACCES") throw err;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
