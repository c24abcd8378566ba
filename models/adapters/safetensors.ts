/**
 * safetensors (Hugging Face's tensor file, the format of PEFT's `adapter_model.safetensors`):
 *
 *   u64 little-endian N | N bytes of UTF-8 JSON header | data
 *
 * The header maps each tensor name to `{"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}`
 * (offsets into the data section, which follows the header), plus an optional
 * `"__metadata__": {string: string}`. Values are little-endian, row-major (C order). The
 * tensors' byte ranges cover the data section exactly, without gaps or overlaps.
 *
 * Written here rather than taken from npm: the format is this small, no maintained npm package
 * was at hand, and the reader must refuse a damaged file with a reason (an import refuses
 * foreign adapters with a message), which a strict reader of our own makes certain. The
 * writer pads the header with spaces to a multiple of 8 bytes, as the reference implementation
 * does, so the data section starts 8-byte aligned.
 */
import fs from "node:fs";
import { writeFileAtomicSync } from "../../common/fs/atomicFile.js";
import { f16BitsToF32, f32ToF16Bits } from "../gguf/writer.js";

/** The float dtypes we read (to f32) and write. */
export type SafetensorsDtype = "F32" | "F16" | "BF16" | "F64";

const DTYPE_BYTES: Record<string, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
};

/** Larger headers are refused (the reference implementation's limit is 100 MB). */
const MAX_HEADER_BYTES = 100_000_000;

export class SafetensorsError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(`${file}: ${problem}`);
    this.name = "SafetensorsError";
  }
}

export interface SafetensorsTensorInfo {
  name: string;
  dtype: string;
  shape: number[];
  /** byte range within the data section */
  begin: number;
  end: number;
}

export interface SafetensorsFile {
  path: string;
  metadata: Record<string, string>;
  /** in data order */
  tensors: SafetensorsTensorInfo[];
  /** the data section */
  data: Uint8Array;
}

export interface SafetensorsTensorSpec {
  name: string;
  shape: number[];
  /** values, row-major */
  values: Float32Array;
  /** stored dtype (default F32) */
  dtype?: Exclude<SafetensorsDtype, "F64">;
}

/** The bytes of a safetensors file holding `tensors` (sorted by name) and `metadata`. */
export function encodeSafetensors(tensors: SafetensorsTensorSpec[], metadata: Record<string, string> = {}): Buffer {
  const sorted = [...tensors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  const chunks: Uint8Array[] = [];
  let offset = 0;
  const seen = new Set<string>();
  for (const t of sorted) {
    if (t.name === "__metadata__" || t.name === "") throw new Error(`invalid tensor name '${t.name}'`);
    if (seen.has(t.name)) throw new Error(`duplicate tensor name '${t.name}'`);
    seen.add(t.name);
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (t.shape.some((d) => !Number.isInteger(d) || d < 0) || n !== t.values.length) {
      throw new Error(`tensor '${t.name}': shape [${t.shape.join(", ")}] does not hold ${t.values.length} values`);
    }
    const dtype = t.dtype ?? "F32";
    const bytes = encodeValues(t.values, dtype);
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    chunks.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  const len = Buffer.byteLength(json, "utf8");
  json += " ".repeat((8 - (len % 8)) % 8);
  const head = Buffer.from(json, "utf8");
  const out = Buffer.alloc(8 + head.length + offset);
  out.writeBigUInt64LE(BigInt(head.length), 0);
  head.copy(out, 8);
  let at = 8 + head.length;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Writes a safetensors file atomically (temp name, fsync, rename). */
export function writeSafetensors(file: string, tensors: SafetensorsTensorSpec[], metadata: Record<string, string> = {}): void {
  writeFileAtomicSync(file, encodeSafetensors(tensors, metadata), 0o644);
}

function encodeValues(values: Float32Array, dtype: Exclude<SafetensorsDtype, "F64">): Uint8Array {
  const n = values.length;
  if (dtype === "F32") {
    const out = new Uint8Array(n * 4);
    const view = new DataView(out.buffer);
    for (let i = 0; i < n; i++) view.setFloat32(i * 4, values[i], true);
    return out;
  }
  const out = new Uint8Array(n * 2);
  const view = new DataView(out.buffer);
  if (dtype === "F16") {
    for (let i = 0; i < n; i++) view.setUint16(i * 2, f32ToF16Bits(values[i]), true);
  } else {
    // bfloat16: the high half of the f32 bits, rounded to nearest even (NaN kept a NaN).
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    for (let i = 0; i < n; i++) {
      f[0] = values[i];
      const bits = u[0];
      let h: number;
      if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) h = (bits >>> 16) | 0x40;
      else h = ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
      view.setUint16(i * 2, h, true);
    }
  }
  return out;
}

/** Parses a safetensors buffer; every inconsistency is a SafetensorsError naming the problem. */
export function decodeSafetensors(buf: Uint8Array, file = "<safetensors>"): SafetensorsFile {
  const fail = (problem: string): never => {
    throw new SafetensorsError(file, problem);
  };
  if (buf.length < 8) fail(`not a safetensors file (only ${buf.length} bytes)`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const n64 = view.getBigUint64(0, true);
  if (n64 > BigInt(MAX_HEADER_BYTES)) fail(`header length ${n64} is implausible (not a safetensors file, or damaged)`);
  const n = Number(n64);
  if (8 + n > buf.length) fail(`truncated: the header needs ${n} bytes, the file has ${buf.length - 8} after the length`);
  if (n < 2 || buf[8] !== 0x7b /* { */) fail("header is not a JSON object");
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(buf.subarray(8, 8 + n)));
  } catch (e) {
    return fail(`header is not valid JSON (${(e as Error).message.split("\n")[0]})`);
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) return fail("header is not a JSON object");
  const data = buf.subarray(8 + n);
  const metadata: Record<string, string> = {};
  const tensors: SafetensorsTensorInfo[] = [];
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) fail("__metadata__ is not an object");
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof v !== "string") fail(`__metadata__.${k} is not a string`);
        metadata[k] = v as string;
      }
      continue;
    }
    const info = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
    if (typeof info !== "object" || info === null) fail(`tensor '${name}' has no description`);
    const { dtype, shape, data_offsets: offs } = info!;
    if (typeof dtype !== "string" || !(dtype in DTYPE_BYTES)) fail(`tensor '${name}' has unknown dtype ${JSON.stringify(dtype)}`);
    if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || d < 0)) fail(`tensor '${name}' has an invalid shape ${JSON.stringify(shape)}`);
    if (!Array.isArray(offs) || offs.length !== 2 || offs.some((o) => !Number.isSafeInteger(o) || o < 0))
      fail(`tensor '${name}' has invalid data_offsets ${JSON.stringify(offs)}`);
    const [begin, end] = offs as [number, number];
    const count = (shape as number[]).reduce((a, b) => a * b, 1);
    if (end < begin || end - begin !== count * DTYPE_BYTES[dtype as string]) {
      fail(
        `tensor '${name}' (${dtype as string} [${(shape as number[]).join(", ")}]) needs ${count * DTYPE_BYTES[dtype as string]} bytes, its data_offsets give ${end - begin}`,
      );
    }
    tensors.push({ name, dtype: dtype as string, shape: shape as number[], begin, end });
  }
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  for (const t of tensors) {
    if (t.begin !== at) fail(t.begin < at ? `tensor '${t.name}' overlaps the tensor before it` : `gap in the data before tensor '${t.name}'`);
    at = t.end;
  }
  if (at !== data.length)
    fail(at > data.length ? `truncated: the tensors need ${at} bytes of data, the file has ${data.length}` : `${data.length - at} bytes after the last tensor`);
  return { path: file, metadata, tensors, data };
}

/** Reads and parses a safetensors file. */
export function readSafetensors(file: string): SafetensorsFile {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new SafetensorsError(
      file,
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : `cannot read (${code ?? (e as Error).message})`,
    );
  }
  return decodeSafetensors(buf, file);
}

/** A tensor's values as f32 (F32, F16, BF16 and F64 are read; other dtypes are refused). */
export function tensorF32(file: SafetensorsFile, t: SafetensorsTensorInfo): Float32Array {
  const bytes = file.data.subarray(t.begin, t.end);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = t.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  switch (t.dtype) {
    case "F32":
      for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * 4, true);
      return out;
    case "F64":
      for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
      return out;
    case "F16":
      for (let i = 0; i < n; i++) out[i] = f16BitsToF32(view.getUint16(i * 2, true));
      return out;
    case "BF16": {
      const u = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) u[i] = view.getUint16(i * 2, true) << 16;
      return out;
    }
    default:
      throw new SafetensorsError(file.path, `tensor '${t.name}' has dtype ${t.dtype}; only float tensors (F32, F16, BF16, F64) can be read as weights`);
  }
}
