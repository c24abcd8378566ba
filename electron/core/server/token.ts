import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";

/**
 * The bearer token: generated on first start, stored owner-only (0600), reused afterwards.
 * A token given explicitly (`--token`) wins and is not written.
 */
export function loadOrCreateToken(file: string, override?: string): string {
  if (override) return override;
  try {
    const existing = fs.readFileSync(file, "utf8").trim();
    if (/^[A-Za-z0-9_-]{20,}$/.test(existing)) {
      // Repair permissions if someone loosened them.
      if (process.platform !== "win32" && (fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, 0o600);
      return existing;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const token = crypto.randomBytes(24).toString("base64url");
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomicSync(file, `${token}\n`);
  return token;
}

/** Constant-time comparison of an `Authorization` header against the token. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith("Bearer ")) return false;
  const given = Buffer.from(header.slice(7).trim());
  const want = Buffer.from(token);
  return given.length === want.length && crypto.timingSafeEqual(given, want);
}
