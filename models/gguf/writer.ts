/**
 * GGUF v3 writer: metadata (every value type, arrays included), tensor infos, tensor data
 * padded to the file's alignment. Files are written atomically (temp name, fsync, rename) so
 * a reader never sees half a model.
 */
import fs from "node:fs";
import { writeFileAtomicSync, writeFileAtomicWith } from "../../common/fs/atomicFile.js";
import { GGML_TYPE_TRAITS, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GgmlType, GgufError, GgufValueType, type GgufMetaValue } from "./types.js";

export interface GgufTensorSpec {
  name: string;
  /** ggml `ne`: dims[0] is the innermost (contiguous) dimension. */
  dims: number[];
  type: GgmlType;
  data: Uint8Array;
}

export interface GgufWriteSpec {
  metadata: Array<[string, GgufMetaValue]> | Map<string, GgufMetaValue>;
  tensors: GgufTensorSpec[];
  /** Data alignment; written as `general.alignment` when it is not the default 32. */
  alignment?: number;
}

const GGUF_VERSION = 3;
const ALIGNMENT_KEY = "general.alignment";

/** Growable little-endian byte buffer. */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number): void {
    this.reserve(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }
  i8(v: number): void {
    this.reserve(1);
    this.buf.writeInt8(v, this.length);
    this.length += 1;
  }
  u16(v: number): void {
    this.reserve(2);
    this.buf.writeUInt16LE(v, this.length);
    this.length += 2;
  }
  i16(v: number): void {
    this.reserve(2);
    this.buf.writeInt16LE(v, this.length);
    this.length += 2;
  }
  u32(v: number): void {
    this.reserve(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number): void {
    this.reserve(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  f32(v: number): void {
    this.reserve(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  f64(v: number): void {
    this.reserve(8);
    this.buf.writeDoubleLE(v, this.length);
    this.length += 8;
  }
  u64(v: bigint | number): void {
    this.reserve(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  i64(v: bigint): void {
    this.reserve(8);
    this.buf.writeBigInt64LE(v, this.length);
    this.length += 8;
  }
  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  str(s: string): void {
    const b = Buffer.from(s, "utf8");
    this.u64(b.length);
    this.bytes(b);
  }
  pad(alignment: number): void {
    const n = padding(this.length, alignment);
    this.reserve(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
  }
  result(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function padding(offset: number, alignment: number): number {
  return (alignment - (offset % alignment)) % alignment;
}

/** Bytes a tensor of `type` with `dims` occupies; throws when the row does not fill whole blocks. */
export function tensorByteLength(file: string, name: string, dims: number[], type: GgmlType): number {
  const traits = GGML_TYPE_TRAITS[type];
  if (!traits) throw new GgufError(file, `tensor '${name}': unsupported type ${type}`);
  if (dims.length === 0 || dims.length > 4) throw new GgufError(file, `tensor '${name}': needs 1 to 4 dims, got ${dims.length}`);
  for (const d of dims) {
    if (!Number.isSafeInteger(d) || d <= 0) throw new GgufError(file, `tensor '${name}': bad dim ${d}`);
  }
  if (dims[0] % traits.blockSize !== 0) {
    throw new GgufError(file, `tensor '${name}': row length ${dims[0]} is not a multiple of ${traits.name}'s block size ${traits.blockSize}`);
  }
  const n = dims.reduce((a, b) => a * b, 1);
  return (n / traits.blockSize) * traits.typeSize;
}

function checkScalar(file: string, key: string, type: GgufValueType, v: unknown): void {
  const bad = (why: string) => new GgufError(file, `metadata '${key}': ${why}`);
  switch (type) {
    case GgufValueType.UINT8:
    case GgufValueType.INT8:
    case GgufValueType.UINT16:
    case GgufValueType.INT16:
    case GgufValueType.UINT32:
    case GgufValueType.INT32: {
      if (typeof v !== "number" || !Number.isInteger(v)) throw bad(`expected an integer, got ${String(v)}`);
      const ranges: Record<number, [number, number]> = {
        [GgufValueType.UINT8]: [0, 0xff],
        [GgufValueType.INT8]: [-0x80, 0x7f],
        [GgufValueType.UINT16]: [0, 0xffff],
        [GgufValueType.INT16]: [-0x8000, 0x7fff],
        [GgufValueType.UINT32]: [0, 0xffffffff],
        [GgufValueType.INT32]: [-0x80000000, 0x7fffffff],
      };
      const [lo, hi] = ranges[type];
      if (v < lo || v > hi) throw bad(`${v} is out of range for ${GgufValueType[type]}`);
      return;
    }
    case GgufValueType.FLOAT32:
    case GgufValueType.FLOAT64:
      if (typeof v !== "number") throw bad(`expected a number, got ${String(v)}`);
      return;
    case GgufValueType.UINT64:
    case GgufValueType.INT64:
      if (typeof v !== "bigint") throw bad(`expected a bigint, got ${String(v)}`);
      if (type === GgufValueType.UINT64 ? v < 0n || v >= 1n << 64n : v < -(1n << 63n) || v >= 1n << 63n) {
        throw bad(`${v} is out of range for ${GgufValueType[type]}`);
      }
      return;
    case GgufValueType.BOOL:
      if (typeof v !== "boolean") throw bad(`expected a boolean, got ${String(v)}`);
      return;
    case GgufValueType.STRING:
      if (typeof v !== "string") throw bad(`expected a string, got ${String(v)}`);
      return;
    default:
      throw bad(`unknown value type ${type}`);
  }
}

function writeScalar(out: ByteSink, type: GgufValueType, v: number | bigint | boolean | string): void {
  switch (type) {
    case GgufValueType.UINT8:
      out.u8(v as number);
      break;
    case GgufValueType.INT8:
      out.i8(v as number);
      break;
    case GgufValueType.UINT16:
      out.u16(v as number);
      break;
    case GgufValueType.INT16:
      out.i16(v as number);
      break;
    case GgufValueType.UINT32:
      out.u32(v as number);
      break;
    case GgufValueType.INT32:
      out.i32(v as number);
      break;
    case GgufValueType.FLOAT32:
      out.f32(v as number);
      break;
    case GgufValueType.FLOAT64:
      out.f64(v as number);
      break;
    case GgufValueType.UINT64:
      out.u64(v as bigint);
      break;
    case GgufValueType.INT64:
      out.i64(v as bigint);
      break;
    case GgufValueType.BOOL:
      out.u8(v ? 1 : 0);
      break;
    case GgufValueType.STRING:
      out.str(v as string);
      break;
    default:
      throw new Error(`unreachable value type ${type}`);
  }
}

function writeValue(out: ByteSink, file: string, key: string, mv: GgufMetaValue): void {
  out.u32(mv.type);
  if (mv.type === GgufValueType.ARRAY) {
    if ((mv.itemType as GgufValueType) === GgufValueType.ARRAY) throw new GgufError(file, `metadata '${key}': nested arrays are not supported`);
    out.u32(mv.itemType);
    out.u64(mv.value.length);
    for (const item of mv.value) {
      checkScalar(file, key, mv.itemType, item);
      writeScalar(out, mv.itemType, item);
    }
  } else {
    checkScalar(file, key, mv.type, mv.value);
    writeScalar(out, mv.type, mv.value);
  }
}

/** What the header says about a tensor: its name, shape and type (its bytes come separately). */
export interface GgufTensorHead {
  name: string;
  dims: number[];
  type: GgmlType;
}

/** A GGUF file's header bytes and where each tensor's data goes. */
export interface GgufLayout {
  /** Magic, counts, metadata and tensor infos, padded to the alignment: the data starts right after. */
  header: Buffer;
  alignment: number;
  /** Per tensor, in order: offset in the data section and byte length. */
  offsets: number[];
  byteLengths: number[];
  /** Length of the data section, trailing padding included. */
  dataSize: number;
}

/**
 * Validates metadata and tensor infos and encodes the header: everything before the tensor
 * data. Shared by the in-memory encoder and the streaming writer, so both write the same bytes.
 */
export function encodeGgufHeader(
  metadata: GgufWriteSpec["metadata"],
  tensors: readonly GgufTensorHead[],
  opts: { alignment?: number; file?: string } = {},
): GgufLayout {
  const file = opts.file ?? "<gguf>";
  const entries = metadata instanceof Map ? [...metadata.entries()] : [...metadata];
  const seen = new Set<string>();
  for (const [key] of entries) {
    if (seen.has(key)) throw new GgufError(file, `metadata key '${key}' appears twice`);
    seen.add(key);
  }

  // Alignment: the option, else general.alignment, else 32; both given must agree.
  const metaAlign = entries.find(([k]) => k === ALIGNMENT_KEY)?.[1];
  let alignment = opts.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  if (metaAlign) {
    if (metaAlign.type !== GgufValueType.UINT32) throw new GgufError(file, `${ALIGNMENT_KEY} must be UINT32`);
    if (opts.alignment !== undefined && opts.alignment !== metaAlign.value) {
      throw new GgufError(file, `alignment ${opts.alignment} disagrees with ${ALIGNMENT_KEY} ${metaAlign.value}`);
    }
    alignment = metaAlign.value;
  } else if (alignment !== GGUF_DEFAULT_ALIGNMENT) {
    entries.push([ALIGNMENT_KEY, { type: GgufValueType.UINT32, value: alignment }]);
  }
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new GgufError(file, `alignment must be a power of two, got ${alignment}`);
  }

  const names = new Set<string>();
  const offsets: number[] = [];
  const byteLengths: number[] = [];
  let dataSize = 0;
  for (const t of tensors) {
    // ggml keeps names in a 64-byte field (GGML_MAX_NAME) with the terminating NUL.
    if (t.name === "" || Buffer.byteLength(t.name) > 63) throw new GgufError(file, `tensor name '${t.name}' must be 1 to 63 bytes`);
    if (names.has(t.name)) throw new GgufError(file, `tensor '${t.name}' appears twice`);
    names.add(t.name);
    const size = tensorByteLength(file, t.name, t.dims, t.type);
    dataSize += padding(dataSize, alignment);
    offsets.push(dataSize);
    byteLengths.push(size);
    dataSize += size;
  }
  // Trailing padding keeps the data section a whole number of aligned units, as ggml does.
  dataSize += padding(dataSize, alignment);

  const out = new ByteSink();
  out.u32(GGUF_MAGIC);
  out.u32(GGUF_VERSION);
  out.u64(tensors.length);
  out.u64(entries.length);
  for (const [key, value] of entries) {
    out.str(key);
    writeValue(out, file, key, value);
  }
  tensors.forEach((t, i) => {
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(t.type);
    out.u64(offsets[i]);
  });
  out.pad(alignment);
  return { header: out.result(), alignment, offsets, byteLengths, dataSize };
}

/** Serialises a GGUF file in memory; `file` only names it in errors. */
export function encodeGguf(spec: GgufWriteSpec, file = "<gguf>"): Buffer {
  const layout = encodeGgufHeader(spec.metadata, spec.tensors, { alignment: spec.alignment, file });
  spec.tensors.forEach((t, i) => {
    if (t.data.length !== layout.byteLengths[i]) {
      throw new GgufError(
        file,
        `tensor '${t.name}': data is ${t.data.length} bytes, dims ${t.dims.join("x")} of ${GGML_TYPE_TRAITS[t.type]!.name} need ${layout.byteLengths[i]}`,
      );
    }
  });
  // Zero-filled, so the padding between tensors is zeros.
  const out = Buffer.alloc(layout.header.length + layout.dataSize);
  layout.header.copy(out, 0);
  spec.tensors.forEach((t, i) => out.set(t.data, layout.header.length + layout.offsets[i]));
  return out;
}

/** A tensor whose bytes are produced on demand, in order, when the file is written. */
export interface GgufTensorStream extends GgufTensorHead {
  /** The tensor's bytes, in order; together exactly the length its dims and type need. */
  chunks: () => Iterable<Uint8Array>;
}

export interface GgufStreamSpec {
  metadata: GgufWriteSpec["metadata"];
  tensors: GgufTensorStream[];
  alignment?: number;
}

/** Where a streaming write is, reported after each tensor. */
export interface GgufStreamProgress {
  /** Tensors written so far (1-based index of the last one). */
  tensor: number;
  tensors: number;
  name: string;
  bytesWritten: number;
  totalBytes: number;
}

/** Buffers small writes to a file descriptor; big ones go straight through. */
class FdSink {
  private buf = Buffer.allocUnsafe(1 << 22);
  private used = 0;
  written = 0;

  constructor(private readonly fd: number) {}

  write(bytes: Uint8Array): void {
    if (bytes.length >= this.buf.length) {
      this.flush();
      writeAll(this.fd, bytes);
    } else {
      if (this.used + bytes.length > this.buf.length) this.flush();
      this.buf.set(bytes, this.used);
      this.used += bytes.length;
    }
    this.written += bytes.length;
  }
  zeros(n: number): void {
    if (n > 0) this.write(new Uint8Array(n));
  }
  flush(): void {
    if (this.used > 0) writeAll(this.fd, this.buf.subarray(0, this.used));
    this.used = 0;
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += fs.writeSync(fd, bytes, off, bytes.length - off);
}

/**
 * Writes a GGUF file tensor by tensor, never holding more than one chunk of data: the header,
 * then each tensor's chunks as they are produced, into a temp file that is fsynced and renamed
 * over `file` (or removed on any error). Same spec → same bytes as encodeGguf. Returns the size.
 */
export function writeGgufStream(file: string, spec: GgufStreamSpec, onProgress?: (p: GgufStreamProgress) => void): number {
  const layout = encodeGgufHeader(spec.metadata, spec.tensors, { alignment: spec.alignment, file });
  const totalBytes = layout.header.length + layout.dataSize;
  writeFileAtomicWith(file, 0o644, (fd) => {
    const out = new FdSink(fd);
    out.write(layout.header);
    const dataStart = layout.header.length;
    spec.tensors.forEach((t, i) => {
      out.zeros(dataStart + layout.offsets[i] - out.written);
      const need = layout.byteLengths[i];
      let got = 0;
      for (const chunk of t.chunks()) {
        got += chunk.length;
        if (got > need) break;
        out.write(chunk);
      }
      if (got !== need) {
        throw new GgufError(
          file,
          `tensor '${t.name}': data is ${got > need ? "more than " : ""}${got} bytes, dims ${t.dims.join("x")} of ${GGML_TYPE_TRAITS[t.type]!.name} need ${need}`,
        );
      }
      onProgress?.({ tensor: i + 1, tensors: spec.tensors.length, name: t.name, bytesWritten: out.written, totalBytes });
    });
    out.zeros(totalBytes - out.written);
    out.flush();
  });
  return totalBytes;
}

/** Writes `bytes` to `file` atomically (temp name, fsync, rename), readable by all as GGUF files are. */
export function writeFileAtomic(file: string, bytes: Uint8Array): void {
  writeFileAtomicSync(file, bytes, 0o644);
}

/** Writes a GGUF v3 file atomically. Throws GgufError on inconsistent input. */
export function writeGguf(file: string, spec: GgufWriteSpec): void {
  writeFileAtomic(file, encodeGguf(spec, file));
}

/** Little-endian F32 bytes of `values`. */
export function f32Bytes(values: Float32Array): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i], true);
  return out;
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** IEEE half bits of `x`, rounded to nearest, ties to even; overflow gives ±inf, NaN stays NaN. */
export function f32ToF16Bits(x: number): number {
  f32Scratch[0] = x;
  const bits = u32Scratch[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the full significand into place, then round.
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) === 1)) h += 1;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, which is the right result (even to inf).
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h += 1;
  return sign | h;
}

/** Float value of IEEE half bits. */
export function f16BitsToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Little-endian F16 bytes of `values` (round to nearest even). */
export function f16Bytes(values: Float32Array): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  for (let i = 0; i < values.length; i++) {
    const h = f32ToF16Bits(values[i]);
    out[i * 2] = h & 0xff;
    out[i * 2 + 1] = h >>> 8;
  }
  return out;
}
