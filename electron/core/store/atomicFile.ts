import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Replaces `file` with `data` so that a crash at any point leaves either the old or the new
 * content, never a mix: write a temp file in the same directory, fsync it, rename it over the
 * target, fsync the directory (so the rename itself survives a power cut).
 */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, mode = 0o600): void {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`);
  const fd = fs.openSync(tmp, "w", mode);
  try {
    fs.writeFileSync(fd, data);
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
