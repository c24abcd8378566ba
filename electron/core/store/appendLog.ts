import fs from "node:fs";
import path from "node:path";

/** What opening a log found: how many lines, and what it had to skip or cut. */
export interface LogOpenReport {
  file: string;
  lines: number;
  bytes: number;
  /** Bytes after the last newline (a line torn by a crash mid-write); cut unless read-only. */
  tornTail: { offset: number; bytes: number; truncated: boolean } | null;
  /** Complete lines that are not valid JSON (disk damage): skipped, left in place. */
  corrupt: Array<{ offset: number; length: number; error: string }>;
}

export interface LogOpenOptions {
  /** Never write: a torn tail is ignored, not cut (another process may own the file). */
  readOnly?: boolean;
  /** fdatasync after each append (default true): a power cut loses at most the line being written. */
  durable?: boolean;
  /** Called for each valid line in file order while opening. */
  onLine?: (value: unknown, offset: number, length: number) => void;
}

/** Where a line lives in the file, for reading it back without a scan. */
export interface LogLocation {
  offset: number;
  /** bytes, without the newline */
  length: number;
}

const CHUNK = 1 << 20;
const NL = 0x0a;

/**
 * An append-only JSON Lines file: one JSON value per line, never rewritten. Lines are
 * appended with one write each; opening scans the file once, hands every valid line to
 * `onLine` with its byte offset (callers index by offset, so later reads are one pread),
 * and cuts a torn last line left by a crash.
 */
export class AppendLog {
  private size: number;

  private constructor(
    readonly file: string,
    private readonly fd: number,
    size: number,
    readonly readOnly: boolean,
    private readonly durable: boolean,
  ) {
    this.size = size;
  }

  static open(file: string, opts: LogOpenOptions = {}): { log: AppendLog; report: LogOpenReport } {
    const readOnly = opts.readOnly ?? false;
    if (!readOnly) fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    let fd: number;
    try {
      fd = fs.openSync(file, readOnly ? "r" : "a+", 0o600);
    } catch (err) {
      if (readOnly && (err as NodeJS.ErrnoException).code === "ENOENT") {
        return { log: new AppendLog(file, -1, 0, true, false), report: { file, lines: 0, bytes: 0, tornTail: null, corrupt: [] } };
      }
      throw err;
    }
    const report = scan(fd, file, opts.onLine);
    let size = report.bytes;
    if (report.tornTail) {
      if (!readOnly) {
        fs.ftruncateSync(fd, report.tornTail.offset);
        fs.fsyncSync(fd);
        report.tornTail.truncated = true;
      }
      size = report.tornTail.offset;
    }
    return { log: new AppendLog(file, fd, size, readOnly, opts.durable ?? true), report };
  }

  /** Bytes of valid content (after any cut tail). */
  get bytes(): number {
    return this.size;
  }

  /** Appends one value as one line; returns where it went. */
  append(value: unknown): LogLocation {
    return this.appendAll([value])[0];
  }

  /** Appends several lines with one write and one sync (they land together or, after a crash, the whole ones do). */
  appendAll(values: readonly unknown[]): LogLocation[] {
    if (this.readOnly) throw new Error(`${this.file} is open read-only`);
    const texts = values.map((v) => {
      const json = JSON.stringify(v);
      if (json === undefined) throw new Error("cannot log an undefined value");
      return `${json}\n`;
    });
    const buf = Buffer.from(texts.join(""), "utf8");
    const locs: LogLocation[] = [];
    let offset = this.size;
    for (const t of texts) {
      const len = Buffer.byteLength(t, "utf8");
      locs.push({ offset, length: len - 1 });
      offset += len;
    }
    let done = 0;
    // O_APPEND: every write lands at the end; loop in case the OS writes short.
    while (done < buf.length) done += fs.writeSync(this.fd, buf, done, buf.length - done);
    if (this.durable) fs.fdatasyncSync(this.fd);
    this.size += buf.length;
    return locs;
  }

  /** Reads back the line at a location returned by `append` or reported by `onLine`. */
  read(loc: LogLocation): unknown {
    const buf = Buffer.allocUnsafe(loc.length);
    let got = 0;
    while (got < loc.length) {
      const n = fs.readSync(this.fd, buf, got, loc.length - got, loc.offset + got);
      if (n === 0) throw new Error(`${this.file}: line at ${loc.offset} is cut short`);
      got += n;
    }
    return JSON.parse(buf.toString("utf8"));
  }

  close(): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
  }
}

function scan(fd: number, file: string, onLine: LogOpenOptions["onLine"]): LogOpenReport {
  const report: LogOpenReport = { file, lines: 0, bytes: 0, tornTail: null, corrupt: [] };
  let pending: Buffer[] = []; // pieces of the line that started in an earlier chunk
  let pendingLen = 0;
  let lineStart = 0; // file offset where the current line starts
  let pos = 0;
  const chunk = Buffer.allocUnsafe(CHUNK);
  for (;;) {
    const n = fs.readSync(fd, chunk, 0, CHUNK, pos);
    if (n === 0) break;
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(NL, from);
      if (nl === -1 || nl >= n) break;
      const piece = chunk.subarray(from, nl);
      const line = pendingLen > 0 ? Buffer.concat([...pending, piece]) : piece;
      handleLine(line, lineStart, report, onLine);
      lineStart = pos + nl + 1;
      pending = [];
      pendingLen = 0;
      from = nl + 1;
    }
    if (from < n) {
      pending.push(Buffer.from(chunk.subarray(from, n)));
      pendingLen += n - from;
    }
    pos += n;
  }
  report.bytes = pos;
  if (pendingLen > 0) report.tornTail = { offset: lineStart, bytes: pendingLen, truncated: false };
  return report;
}

function handleLine(line: Buffer, offset: number, report: LogOpenReport, onLine: LogOpenOptions["onLine"]) {
  if (line.length === 0) return; // a blank line carries nothing
  let value: unknown;
  try {
    value = JSON.parse(line.toString("utf8"));
  } catch (err) {
    report.corrupt.push({ offset, length: line.length, error: (err as Error).message });
    return;
  }
  report.lines++;
  onLine?.(value, offset, line.length);
}

/** One line for logs and the CLI: what recovery did, or null when the file was clean. */
export function describeRecovery(r: LogOpenReport): string | null {
  const parts: string[] = [];
  if (r.tornTail) {
    parts.push(`${r.tornTail.truncated ? "cut" : "ignored"} a torn last line (${r.tornTail.bytes} bytes at offset ${r.tornTail.offset})`);
  }
  if (r.corrupt.length > 0) parts.push(`skipped ${r.corrupt.length} unreadable line(s) (first at offset ${r.corrupt[0].offset})`);
  return parts.length ? `${r.file}: kept ${r.lines} line(s); ${parts.join("; ")}` : null;
}
