/**
 * GGUF v2/v3 reader. `readGguf` parses only the header, metadata and tensor infos with
 * positional reads (a multi-GB model is never loaded whole); tensor data is read on demand.
 * Every inconsistency becomes a GgufError naming the file and the problem, so callers never
 * see a RangeError or read past the end of the file.
 */
import fs from "node:fs";
import { canDequantize, dequantize, typeName } from "./dequant.js";
import { GGML_TYPE_TRAITS, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GgmlType, GgufError, GgufValueType, type GgufMetaValue, type GgufTensorInfo } from "./types.js";

export interface GgufFile {
  path: string;
  version: number;
  alignment: number;
  metadata: Map<string, GgufMetaValue>;
  /** In file order. */
  tensors: GgufTensorInfo[];
  /** Absolute offset of the data section. */
  tensorDataOffset: number;
  fileSize: number;
  /** The whole data section, when read with `{ loadData: true }`; tensor bytes are then views of it. */
  data?: Uint8Array;
}

export interface ReadGgufOptions {
  /** Also read the whole tensor data section into memory (small models; tests). */
  loadData?: boolean;
}

/** ggml's GGML_MAX_DIMS. */
const MAX_DIMS = 4;
/** Header reads go through a window this big; it grows for a single larger item. */
const CHUNK = 1 << 18;
/** Largest single fs.readSync (its length argument is a signed 32-bit int). */
const MAX_READ = 1 << 30;
/**
 * Sanity caps far above real files (chat templates are KBs, vocabularies ~300k entries), so a
 * corrupt length fails with a message instead of a huge allocation.
 */
const MAX_STRING_BYTES = 1 << 28;
const MAX_ARRAY_ITEMS = 1 << 26;

/** What is being read, for error messages; a function so hot loops build no strings. */
type Label = string | (() => string);
const label = (what: Label): string => (typeof what === "string" ? what : what());

/** Sequential little-endian reader over a file, refilling a window with positional reads. */
class Cursor {
  pos = 0;
  private buf = Buffer.alloc(0);
  private bufStart = 0;

  constructor(
    private readonly fd: number,
    readonly fileSize: number,
    private readonly fail: (problem: string) => never,
  ) {}

  get remaining(): number {
    return this.fileSize - this.pos;
  }

  /** Makes `n` bytes at `pos` available in the window; returns their index into it. */
  private need(n: number, what: Label): number {
    if (n > this.fileSize - this.pos) {
      this.fail(`truncated: ${label(what)} at offset ${this.pos} needs ${n} bytes, file has ${this.fileSize - this.pos} left`);
    }
    const end = this.bufStart + this.buf.length;
    if (this.pos < this.bufStart || this.pos + n > end) {
      const size = Math.min(Math.max(n, CHUNK), this.fileSize - this.pos);
      this.buf = Buffer.allocUnsafe(size);
      readFully(this.fd, this.buf, this.pos, this.fail);
      this.bufStart = this.pos;
    }
    const at = this.pos - this.bufStart;
    this.pos += n;
    return at;
  }

  // Each accessor calls need() before touching this.buf: need() may replace the window.
  u8(what: Label): number {
    const at = this.need(1, what);
    return this.buf[at];
  }
  i8(what: Label): number {
    const at = this.need(1, what);
    return this.buf.readInt8(at);
  }
  u16(what: Label): number {
    const at = this.need(2, what);
    return this.buf.readUInt16LE(at);
  }
  i16(what: Label): number {
    const at = this.need(2, what);
    return this.buf.readInt16LE(at);
  }
  u32(what: Label): number {
    const at = this.need(4, what);
    return this.buf.readUInt32LE(at);
  }
  i32(what: Label): number {
    const at = this.need(4, what);
    return this.buf.readInt32LE(at);
  }
  f32(what: Label): number {
    const at = this.need(4, what);
    return this.buf.readFloatLE(at);
  }
  f64(what: Label): number {
    const at = this.need(8, what);
    return this.buf.readDoubleLE(at);
  }
  u64(what: Label): bigint {
    const at = this.need(8, what);
    return this.buf.readBigUInt64LE(at);
  }
  i64(what: Label): bigint {
    const at = this.need(8, what);
    return this.buf.readBigInt64LE(at);
  }

  /** A u64 that must be at most `max` (e.g. what fits in the rest of the file), as a number. */
  count(what: Label, max: number): number {
    const at = this.need(8, what);
    const lo = this.buf.readUInt32LE(at);
    const hi = this.buf.readUInt32LE(at + 4);
    // Compared as two halves: no BigInt in the per-string hot path.
    const v = hi * 2 ** 32 + lo;
    if (hi >= 2 ** 21 || v > max) {
      this.fail(
        `${label(what)} ${(BigInt(hi) << 32n) | BigInt(lo)} at offset ${this.pos - 8} is impossible: file truncated or corrupt (at most ${Math.max(0, max)} fit in the rest of the file)`,
      );
    }
    return v;
  }

  str(what: Label): string {
    const len = this.count(typeof what === "string" ? `length of ${what}` : () => `length of ${what()}`, this.remaining - 8);
    if (len > MAX_STRING_BYTES) this.fail(`${label(what)} is ${len} bytes long (more than ${MAX_STRING_BYTES}): corrupt file`);
    if (len === 0) return "";
    const at = this.need(len, what);
    return this.buf.toString("utf8", at, at + len);
  }
}

/** Reads exactly `dst.length` bytes at `position`, in chunks; a short read means truncation. */
function readFully(fd: number, dst: Uint8Array, position: number, fail: (problem: string) => never): void {
  let done = 0;
  while (done < dst.length) {
    let n: number;
    try {
      n = fs.readSync(fd, dst, done, Math.min(dst.length - done, MAX_READ), position + done);
    } catch (err) {
      return fail(`read error at offset ${position + done} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (n === 0) fail(`truncated: file ended at offset ${position + done} while reading ${dst.length} bytes at ${position}`);
    done += n;
  }
}

/** Smallest encoded size of one array item of this type (strings: the u64 length). */
function minItemSize(t: GgufValueType): number {
  switch (t) {
    case GgufValueType.UINT8:
    case GgufValueType.INT8:
    case GgufValueType.BOOL:
      return 1;
    case GgufValueType.UINT16:
    case GgufValueType.INT16:
      return 2;
    case GgufValueType.UINT32:
    case GgufValueType.INT32:
    case GgufValueType.FLOAT32:
      return 4;
    default:
      return 8;
  }
}

function isValueType(t: number): t is GgufValueType {
  const first: number = GgufValueType.UINT8;
  const last: number = GgufValueType.FLOAT64;
  return Number.isInteger(t) && t >= first && t <= last;
}

function readScalar(c: Cursor, t: Exclude<GgufValueType, GgufValueType.ARRAY>, what: Label, fail: (p: string) => never): number | bigint | boolean | string {
  switch (t) {
    case GgufValueType.UINT8:
      return c.u8(what);
    case GgufValueType.INT8:
      return c.i8(what);
    case GgufValueType.UINT16:
      return c.u16(what);
    case GgufValueType.INT16:
      return c.i16(what);
    case GgufValueType.UINT32:
      return c.u32(what);
    case GgufValueType.INT32:
      return c.i32(what);
    case GgufValueType.FLOAT32:
      return c.f32(what);
    case GgufValueType.FLOAT64:
      return c.f64(what);
    case GgufValueType.UINT64:
      return c.u64(what);
    case GgufValueType.INT64:
      return c.i64(what);
    case GgufValueType.BOOL: {
      const at = c.pos;
      const b = c.u8(what);
      if (b > 1) fail(`${label(what)} at offset ${at} is a bool with value ${b} (must be 0 or 1)`);
      return b === 1;
    }
    case GgufValueType.STRING:
      return c.str(what);
  }
  return fail(`${label(what)} has unknown value type ${t as number}`);
}

function readValue(c: Cursor, key: string, fail: (p: string) => never): GgufMetaValue {
  const at = c.pos;
  const t = c.u32(`value type of '${key}'`);
  if (!isValueType(t)) fail(`metadata '${key}' has unknown value type ${t} at offset ${at}`);
  if (t !== GgufValueType.ARRAY) {
    // The union's pairing of type and value holds by construction of readScalar.
    return { type: t, value: readScalar(c, t, `value of '${key}'`, fail) } as GgufMetaValue;
  }
  const itemAt = c.pos;
  const itemType = c.u32(`array item type of '${key}'`);
  if (!isValueType(itemType)) fail(`metadata '${key}' has array of unknown value type ${itemType} at offset ${itemAt}`);
  if (itemType === GgufValueType.ARRAY) fail(`metadata '${key}' is an array of arrays (not supported)`);
  const n = c.count(`array length of '${key}'`, Math.floor((c.remaining - 8) / minItemSize(itemType)));
  if (n > MAX_ARRAY_ITEMS) fail(`metadata '${key}' is an array of ${n} items (more than ${MAX_ARRAY_ITEMS}): corrupt file`);
  const value = new Array<number | bigint | boolean | string>(n);
  let i = 0;
  const item = () => `item ${i} of '${key}'`;
  for (; i < n; i++) value[i] = readScalar(c, itemType, item, fail);
  return { type: GgufValueType.ARRAY, itemType, value };
}

/** Parses the header, metadata and tensor infos of a GGUF file and validates them. */
export function readGguf(path: string, opts: ReadGgufOptions = {}): GgufFile {
  const fail: (problem: string) => never = (problem) => {
    throw new GgufError(path, problem);
  };
  let fd: number;
  try {
    fd = fs.openSync(path, "r");
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return fail(e.code === "ENOENT" ? "no such file" : e.code === "EISDIR" ? "is a directory" : `cannot open (${e.code ?? e.message})`);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) fail("not a regular file");
    const c = new Cursor(fd, st.size, fail);
    if (st.size < 4) fail(`not a GGUF file (only ${st.size} bytes)`);
    const magic = c.u32("magic");
    if (magic !== GGUF_MAGIC) {
      if (magic === 0x47475546) fail("big-endian GGUF is not supported");
      fail("not a GGUF file (bad magic)");
    }
    const version = c.u32("version");
    if (version === 1) fail("GGUF version 1 is not supported (re-convert the model)");
    if (version !== 2 && version !== 3) fail(`unsupported GGUF version ${version}`);
    // Each tensor info takes at least 8+4+8+4+8 bytes; each key/value at least 8+4+1.
    const nTensors = c.count("tensor count", Math.floor(c.remaining / 32));
    const nKv = c.count("metadata count", Math.floor((c.remaining - 8) / 13));

    const metadata = new Map<string, GgufMetaValue>();
    for (let i = 0; i < nKv; i++) {
      const key = c.str(`key of metadata entry ${i}`);
      if (metadata.has(key)) fail(`duplicate metadata key '${key}'`);
      metadata.set(key, readValue(c, key, fail));
    }

    let alignment = GGUF_DEFAULT_ALIGNMENT;
    const al = metadata.get("general.alignment");
    if (al !== undefined) {
      if (al.type !== GgufValueType.UINT32 && al.type !== GgufValueType.INT32 && al.type !== GgufValueType.UINT64) {
        fail(`general.alignment has value type ${GgufValueType[al.type]} (must be an integer)`);
      }
      const a = Number(al.value);
      if (!(a > 0 && (a & (a - 1)) === 0 && a <= 1 << 30)) fail(`general.alignment ${a} is not a power of two`);
      alignment = a;
    }

    const tensors: GgufTensorInfo[] = [];
    const names = new Set<string>();
    for (let i = 0; i < nTensors; i++) {
      const name = c.str(`name of tensor ${i}`);
      const label = `tensor '${name}'`;
      if (names.has(name)) fail(`duplicate tensor name '${name}'`);
      names.add(name);
      const nDims = c.u32(`dimension count of ${label}`);
      if (nDims < 1 || nDims > MAX_DIMS) fail(`${label} has ${nDims} dimensions (must be 1 to ${MAX_DIMS})`);
      const dims: number[] = [];
      let nElements = 1;
      for (let d = 0; d < nDims; d++) {
        const v = c.u64(`dimension ${d} of ${label}`);
        if (v < 1n) fail(`${label} has dimension ${d} of size 0`);
        if (v > BigInt(Number.MAX_SAFE_INTEGER)) fail(`${label} has dimension ${d} of size ${v} (too large)`);
        dims.push(Number(v));
        nElements *= Number(v);
        if (!Number.isSafeInteger(nElements)) fail(`${label} has too many elements (${dims.join(" x ")} x ...)`);
      }
      const type = c.u32(`type of ${label}`);
      const traits = GGML_TYPE_TRAITS[type as GgmlType];
      if (!traits) fail(`${label} has unknown tensor type ${type}`);
      if (dims[0] % traits.blockSize !== 0) {
        fail(`${label} of type ${traits.name} has ${dims[0]} elements per row, not a multiple of its block size ${traits.blockSize}`);
      }
      const offset = c.count(`data offset of ${label}`, Number.MAX_SAFE_INTEGER);
      if (offset % alignment !== 0) fail(`${label} data offset ${offset} is not a multiple of the alignment ${alignment}`);
      const byteLength = (nElements / traits.blockSize) * traits.typeSize;
      tensors.push({ name, dims, type: type, offset, byteLength, nElements });
    }

    const tensorDataOffset = Math.ceil(c.pos / alignment) * alignment;
    if (nTensors > 0 && tensorDataOffset > st.size) fail(`truncated: tensor data section would start at ${tensorDataOffset}, past the end (${st.size} bytes)`);
    for (const t of tensors) {
      const end = tensorDataOffset + t.offset + t.byteLength;
      if (end > st.size)
        fail(`tensor '${t.name}' data (${t.byteLength} bytes at ${tensorDataOffset + t.offset}) runs past the end of the file (${st.size} bytes)`);
    }
    const file: GgufFile = { path, version, alignment, metadata, tensors, tensorDataOffset, fileSize: st.size };
    if (opts.loadData) {
      file.data = new Uint8Array(Math.max(0, st.size - tensorDataOffset));
      readFully(fd, file.data, tensorDataOffset, fail);
    }
    return file;
  } finally {
    fs.closeSync(fd);
  }
}

const tensorIndex = new WeakMap<GgufFile, Map<string, GgufTensorInfo>>();

/** The tensor info for `name`, or undefined. */
export function findTensor(file: GgufFile, name: string): GgufTensorInfo | undefined {
  let idx = tensorIndex.get(file);
  if (!idx) {
    idx = new Map(file.tensors.map((t) => [t.name, t]));
    tensorIndex.set(file, idx);
  }
  return idx.get(name);
}

function resolveTensor(file: GgufFile, t: string | GgufTensorInfo): GgufTensorInfo {
  if (typeof t !== "string") return t;
  const info = findTensor(file, t);
  if (!info) throw new GgufError(file.path, `no tensor named '${t}'`);
  return info;
}

/**
 * Raw bytes of a tensor: a view into `file.data` when the data section was loaded, otherwise a
 * fresh buffer filled by a positional read.
 */
export function readTensorBytes(file: GgufFile, name: string | GgufTensorInfo): Uint8Array {
  const t = resolveTensor(file, name);
  const fail: (problem: string) => never = (problem) => {
    throw new GgufError(file.path, problem);
  };
  const start = file.tensorDataOffset + t.offset;
  if (start + t.byteLength > file.fileSize) fail(`tensor '${t.name}' data runs past the end of the file`);
  if (file.data) return file.data.subarray(t.offset, t.offset + t.byteLength);
  let out: Uint8Array;
  try {
    out = new Uint8Array(t.byteLength);
  } catch {
    return fail(`tensor '${t.name}' (${t.byteLength} bytes) is too large to read into one buffer`);
  }
  let fd: number;
  try {
    fd = fs.openSync(file.path, "r");
  } catch (err) {
    return fail(`cannot open (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  try {
    readFully(fd, out, start, fail);
  } finally {
    fs.closeSync(fd);
  }
  return out;
}

/** A tensor's values as f32, dequantized from its stored type. */
export function readTensorF32(file: GgufFile, name: string | GgufTensorInfo): Float32Array {
  const t = resolveTensor(file, name);
  if (!canDequantize(t.type)) throw new GgufError(file.path, `tensor '${t.name}' has unsupported tensor type ${typeName(t.type)}`);
  const bytes = readTensorBytes(file, t);
  // F32 dequantizes to a view of its bytes; never hand out a view of the shared loaded data.
  const own = file.data && t.type === GgmlType.F32 ? bytes.slice() : bytes;
  return dequantize(t.type, own, t.nElements, `${file.path}: tensor '${t.name}'`);
}

/** A string metadata value, or undefined when absent or not a string. */
export function metaString(file: GgufFile, key: string): string | undefined {
  const v = file.metadata.get(key);
  return v?.type === GgufValueType.STRING ? v.value : undefined;
}

/** A numeric metadata value (64-bit ints converted when safe), or undefined. */
export function metaNumber(file: GgufFile, key: string): number | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v.value === "number") return v.value;
  if (typeof v.value === "bigint") {
    const n = Number(v.value);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}

/** The items of an array metadata value, or undefined when absent or not an array. */
export function metaArray(file: GgufFile, key: string): Array<number | bigint | boolean | string> | undefined {
  const v = file.metadata.get(key);
  return v?.type === GgufValueType.ARRAY ? v.value : undefined;
}

/** `general.architecture`, or undefined. */
export function metaArch(file: GgufFile): string | undefined {
  return metaString(file, "general.architecture");
}

/** A per-architecture key, e.g. archNumber(f, "context_length") reads `llama.context_length`. */
export function archNumber(file: GgufFile, suffix: string): number | undefined {
  const arch = metaArch(file);
  return arch === undefined ? undefined : metaNumber(file, `${arch}.${suffix}`);
}
