/**
 * Builds GGUF bytes field by field for tests, independently of models/gguf/writer.ts, so
 * tests can also produce files the writer would refuse (bad counts, types, offsets).
 */
import { GgufValueType } from "../../models/gguf/types.js";

export const u8 = (v: number) => Buffer.from([v & 0xff]);
export const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
};
export const u64 = (v: number | bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(v));
  return b;
};
export const f32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(v);
  return b;
};
export const str = (s: string) => {
  const bytes = Buffer.from(s, "utf8");
  return Buffer.concat([u64(bytes.length), bytes]);
};

/** One metadata entry: key, value type, encoded value. */
export const kv = (key: string, type: GgufValueType, value: Buffer) => Buffer.concat([str(key), u32(type), value]);
export const kvString = (key: string, v: string) => kv(key, GgufValueType.STRING, str(v));
export const kvU32 = (key: string, v: number) => kv(key, GgufValueType.UINT32, u32(v));

export interface RawTensor {
  name: string;
  dims: number[];
  type: number;
  offset: number;
}

export function tensorInfo(t: RawTensor): Buffer {
  return Buffer.concat([str(t.name), u32(t.dims.length), ...t.dims.map((d) => u64(d)), u32(t.type), u64(t.offset)]);
}

/** A whole file: header, the given metadata entries and tensor infos, padding, then `data`. */
export function ggufBytes(opts: { version?: number; kvs?: Buffer[]; tensors?: RawTensor[]; data?: Buffer; alignment?: number; magic?: Buffer }): Buffer {
  const kvs = opts.kvs ?? [];
  const tensors = opts.tensors ?? [];
  const head = Buffer.concat([
    opts.magic ?? Buffer.from("GGUF", "latin1"),
    u32(opts.version ?? 3),
    u64(tensors.length),
    u64(kvs.length),
    ...kvs,
    ...tensors.map(tensorInfo),
  ]);
  const align = opts.alignment ?? 32;
  const pad = Buffer.alloc((align - (head.length % align)) % align);
  return Buffer.concat([head, pad, opts.data ?? Buffer.alloc(0)]);
}

/** A small valid model-like file: metadata of several types and two F32 tensors. */
export function smallValidGguf(): Buffer {
  const a = Float32Array.from({ length: 8 }, (_, i) => i - 3.5);
  const b = Float32Array.from({ length: 6 }, (_, i) => i * 0.25);
  return ggufBytes({
    kvs: [
      kvString("general.architecture", "llama"),
      kvU32("llama.block_count", 1),
      kv("llama.attention.layer_norm_rms_epsilon", GgufValueType.FLOAT32, f32(1e-5)),
      kv("tokenizer.ggml.tokens", GgufValueType.ARRAY, Buffer.concat([u32(GgufValueType.STRING), u64(3), str("a"), str("bc"), str("<s>")])),
      kv("general.flag", GgufValueType.BOOL, u8(1)),
    ],
    tensors: [
      { name: "a.weight", dims: [4, 2], type: 0, offset: 0 },
      { name: "b.weight", dims: [6], type: 0, offset: 32 },
    ],
    data: Buffer.concat([Buffer.from(a.buffer), Buffer.from(b.buffer)]), // a: 32 bytes, so b starts aligned at 32
  });
}
