import fs from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "../../common/fs/atomicFile.js";

/**
 * Optimizer state file: "CLAWOPT1", u32 LE header length, JSON header, zero padding to a
 * multiple of 4, then raw little-endian float32 data. Binary so that a resume restores the
 * moments bit for bit (JSON numbers would round-trip too, but 10× larger and slower).
 */
const MAGIC = "CLAWOPT1";

/** One named moment tensor, as plain data (for checkpoints). */
export interface MomentData {
  shape: number[];
  data: Float32Array;
}

/** Everything AdamW (trainer/optim/adamw.ts) needs to continue exactly where a run stopped. */
export interface AdamWState {
  step: number;
  m: Record<string, MomentData>;
  v: Record<string, MomentData>;
}

interface Header {
  version: 1;
  step: number;
  /** Free-form data stored with the state (optimizer options, adapter identity...). */
  meta: Record<string, unknown>;
  tensors: Array<{ name: string; kind: "m" | "v"; shape: number[]; offset: number; length: number }>;
}

export function writeOptimizerState(file: string, state: AdamWState, meta: Record<string, unknown> = {}): void {
  const tensors: Header["tensors"] = [];
  const chunks: Float32Array[] = [];
  let offset = 0;
  for (const kind of ["m", "v"] as const) {
    for (const [name, d] of Object.entries(state[kind]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      tensors.push({ name, kind, shape: d.shape, offset, length: d.data.length });
      chunks.push(d.data);
      offset += d.data.length;
    }
  }
  const header: Header = { version: 1, step: state.step, meta, tensors };
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const headLen = 8 + 4 + json.length;
  const pad = (4 - (headLen % 4)) % 4;
  const buf = Buffer.alloc(headLen + pad + offset * 4);
  buf.write(MAGIC, 0, "latin1");
  buf.writeUInt32LE(json.length, 8);
  json.copy(buf, 12);
  const body = new Float32Array(buf.buffer, buf.byteOffset + headLen + pad, offset);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.length;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomicSync(file, buf, 0o644);
}

export function readOptimizerState(file: string): { state: AdamWState; meta: Record<string, unknown> } {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch (err) {
    throw new Error(`cannot read optimizer state ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  const bad = (why: string) => new Error(`${file} is not a valid optimizer state: ${why}`);
  if (buf.length < 12 || buf.toString("latin1", 0, 8) !== MAGIC) throw bad("wrong magic");
  const jsonLen = buf.readUInt32LE(8);
  if (12 + jsonLen > buf.length) throw bad("truncated header");
  let header: Header;
  try {
    header = JSON.parse(buf.toString("utf8", 12, 12 + jsonLen)) as Header;
  } catch {
    throw bad("header is not JSON");
  }
  if (header.version !== 1 || !Array.isArray(header.tensors)) throw bad("unknown version");
  const headLen = 12 + jsonLen;
  const dataStart = headLen + ((4 - (headLen % 4)) % 4);
  const total = header.tensors.reduce((s, t) => s + t.length, 0);
  if (buf.length !== dataStart + total * 4) throw bad(`expected ${dataStart + total * 4} bytes, found ${buf.length}`);
  // Copy out so the result does not depend on the Buffer's alignment.
  const body = new Float32Array(buf.buffer.slice(buf.byteOffset + dataStart, buf.byteOffset + buf.length));
  const state: AdamWState = { step: header.step, m: {}, v: {} };
  for (const t of header.tensors) {
    if (t.shape.reduce((a, b) => a * b, 1) !== t.length || t.offset + t.length > total) throw bad(`tensor ${t.name} has inconsistent size`);
    const d: MomentData = { shape: t.shape, data: body.slice(t.offset, t.offset + t.length) };
    state[t.kind][t.name] = d;
  }
  return { state, meta: header.meta ?? {} };
}
