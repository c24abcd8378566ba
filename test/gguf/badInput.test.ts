import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { readGguf, readTensorBytes, readTensorF32 } from "../../models/gguf/reader.js";
import { GgufError, GgufValueType } from "../../models/gguf/types.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { ggufBytes, kv, kvString, kvU32, smallValidGguf, u32, u64, u8 } from "./ggufBytes.js";

const dir = tempDir("clawrl-gguf-bad-");
let n = 0;
function file(bytes: Uint8Array): string {
  const p = path.join(dir, `f${n++}.gguf`);
  fs.writeFileSync(p, bytes);
  return p;
}

/** readGguf(p) throws a GgufError whose message names the file and matches `re`. */
function rejects(p: string, re: RegExp) {
  assert.throws(
    () => readGguf(p),
    (e: unknown) => {
      assert.ok(e instanceof GgufError, `expected GgufError, got ${String(e)}`);
      assert.ok(e.message.startsWith(`${p}: `), e.message);
      assert.match(e.message, re);
      return true;
    },
  );
}

const oneF32 = (name = "t", dims = [8], type = 0, offset = 0) => ({ name, dims, type, offset });

describe("GGUF reader: bad input", () => {
  it("accepts the small valid file the other cases corrupt", () => {
    const f = readGguf(file(smallValidGguf()));
    assert.equal(f.tensors.length, 2);
    assert.deepEqual(Array.from(readTensorF32(f, "b.weight")), [0, 0.25, 0.5, 0.75, 1, 1.25]);
    assert.deepEqual(f.metadata.get("tokenizer.ggml.tokens"), { type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: ["a", "bc", "<s>"] });
    assert.deepEqual(f.metadata.get("general.flag"), { type: GgufValueType.BOOL, value: true });
  });

  it("rejects files that are not GGUF", () => {
    rejects(file(Buffer.from("hello, this is a text file\n")), /not a GGUF file \(bad magic\)/);
    rejects(file(Buffer.alloc(0)), /not a GGUF file \(only 0 bytes\)/);
    rejects(file(Buffer.from("GG")), /not a GGUF file \(only 2 bytes\)/);
    rejects(file(ggufBytes({ magic: Buffer.from("FUGG", "latin1") })), /big-endian/);
    rejects(path.join(dir, "missing.gguf"), /no such file/);
    rejects(dir, /is a directory|not a regular file/);
  });

  it("rejects unsupported versions", () => {
    rejects(file(ggufBytes({ version: 1 })), /version 1 is not supported/);
    rejects(file(ggufBytes({ version: 4 })), /unsupported GGUF version 4/);
    assert.equal(readGguf(file(ggufBytes({ version: 2 }))).version, 2);
  });

  it("gives a GgufError for every truncation of a small file", () => {
    const whole = smallValidGguf();
    const p = path.join(dir, "trunc.gguf");
    for (let len = 0; len < whole.length; len++) {
      fs.writeFileSync(p, whole.subarray(0, len));
      assert.throws(
        () => readGguf(p),
        (e: unknown) => e instanceof GgufError && /truncated|past the end|not a GGUF/.test(e.message),
        `length ${len}`,
      );
    }
  });

  it("gives a GgufError for truncations of stories260K at many offsets", () => {
    const whole = fs.readFileSync(storiesModelPath());
    const p = path.join(dir, "stories-trunc.gguf");
    fs.writeFileSync(p, whole);
    const header = readGguf(p).tensorDataOffset;
    // Every 7th byte of the header, then a spread through the tensor data; truncate in place, shrinking.
    const lengths = new Set<number>([whole.length - 1, header, header - 1]);
    for (let len = 0; len < header; len += 7) lengths.add(len);
    for (let len = header; len < whole.length; len += 9973) lengths.add(len);
    for (const len of [...lengths].sort((a, b) => b - a)) {
      fs.truncateSync(p, len);
      assert.throws(
        () => readGguf(p),
        (e: unknown) => e instanceof GgufError,
        `length ${len}`,
      );
    }
  });

  it("names an unknown tensor type by number", () => {
    rejects(file(ggufBytes({ tensors: [oneF32("weird", [8], 77)], data: Buffer.alloc(64) })), /tensor 'weird' has unknown tensor type 77/);
  });

  it("rejects tensor data running past the end of the file", () => {
    rejects(file(ggufBytes({ tensors: [oneF32("t", [8])], data: Buffer.alloc(31) })), /tensor 't' data \(32 bytes at \d+\) runs past the end of the file/);
    rejects(file(ggufBytes({ tensors: [oneF32("t", [8], 0, 1 << 20)], data: Buffer.alloc(32) })), /runs past the end/);
  });

  it("rejects impossible string lengths and counts", () => {
    const badKey = Buffer.concat([u64(2n ** 60n), Buffer.from("x")]);
    rejects(file(ggufBytes({ kvs: [badKey] })), /length of key of metadata entry 0 \d+ at offset 24 is impossible/);
    const badValue = kv("general.name", GgufValueType.STRING, Buffer.concat([u64(1000), Buffer.from("short")]));
    rejects(file(ggufBytes({ kvs: [badValue] })), /length of value of 'general.name' 1000 .* is impossible/);
    const bigArray = kv("a", GgufValueType.ARRAY, Buffer.concat([u32(GgufValueType.UINT32), u64(2n ** 40n)]));
    rejects(file(ggufBytes({ kvs: [bigArray] })), /array length of 'a' \d+ .* is impossible/);
    const head = Buffer.concat([Buffer.from("GGUF", "latin1"), u32(3), u64(2n ** 62n), u64(0)]);
    rejects(file(head), /tensor count \d+ .* is impossible/);
    const head2 = Buffer.concat([Buffer.from("GGUF", "latin1"), u32(3), u64(0), u64(1_000_000)]);
    rejects(file(head2), /metadata count 1000000 .* is impossible/);
  });

  it("refuses absurd string and array lengths even when the file is big enough to hold them", () => {
    // Sparse files: the lengths fit in the file, so only the sanity caps can refuse them.
    const longStr = file(ggufBytes({ kvs: [kv("s", GgufValueType.STRING, u64(2 ** 28 + 1))] }));
    fs.truncateSync(longStr, 2 ** 28 + 4096);
    rejects(longStr, /value of 's' is 268435457 bytes long .*corrupt/);
    const longArr = file(ggufBytes({ kvs: [kv("a", GgufValueType.ARRAY, Buffer.concat([u32(GgufValueType.UINT8), u64(2 ** 26 + 1)]))] }));
    fs.truncateSync(longArr, 2 ** 26 + 4096);
    rejects(longArr, /metadata 'a' is an array of 67108865 items .*corrupt/);
    fs.rmSync(longStr);
    fs.rmSync(longArr);
  });

  it("rejects unknown value types, arrays of arrays and bad bools", () => {
    rejects(file(ggufBytes({ kvs: [kv("k", 13 as GgufValueType, u32(0))] })), /metadata 'k' has unknown value type 13/);
    rejects(file(ggufBytes({ kvs: [kv("k", GgufValueType.ARRAY, Buffer.concat([u32(42), u64(0)]))] })), /array of unknown value type 42/);
    rejects(file(ggufBytes({ kvs: [kv("k", GgufValueType.ARRAY, Buffer.concat([u32(GgufValueType.ARRAY), u64(0)]))] })), /array of arrays/);
    rejects(file(ggufBytes({ kvs: [kv("k", GgufValueType.BOOL, u8(2))] })), /bool with value 2/);
  });

  it("rejects duplicate keys and tensor names", () => {
    rejects(file(ggufBytes({ kvs: [kvU32("k", 1), kvU32("k", 2)] })), /duplicate metadata key 'k'/);
    rejects(file(ggufBytes({ tensors: [oneF32("t"), oneF32("t", [8], 0, 32)], data: Buffer.alloc(64) })), /duplicate tensor name 't'/);
  });

  it("rejects bad dimensions, partial blocks, misaligned offsets and bad alignment", () => {
    rejects(file(ggufBytes({ tensors: [oneF32("t", [])], data: Buffer.alloc(32) })), /tensor 't' has 0 dimensions/);
    rejects(file(ggufBytes({ tensors: [oneF32("t", [1, 1, 1, 1, 1])], data: Buffer.alloc(32) })), /tensor 't' has 5 dimensions/);
    rejects(file(ggufBytes({ tensors: [oneF32("t", [8, 0])], data: Buffer.alloc(32) })), /dimension 1 of size 0/);
    rejects(file(ggufBytes({ tensors: [oneF32("t", [2 ** 40, 2 ** 40])], data: Buffer.alloc(32) })), /too many elements/);
    // Q4_K (type 12) rows must be whole 256-weight super-blocks.
    rejects(
      file(ggufBytes({ tensors: [oneF32("q", [100, 4], 12)], data: Buffer.alloc(1024) })),
      /Q4_K has 100 elements per row, not a multiple of its block size 256/,
    );
    rejects(file(ggufBytes({ tensors: [oneF32("t", [8], 0, 4)], data: Buffer.alloc(64) })), /data offset 4 is not a multiple of the alignment 32/);
    rejects(file(ggufBytes({ kvs: [kvU32("general.alignment", 24)] })), /general.alignment 24 is not a power of two/);
    rejects(file(ggufBytes({ kvs: [kvString("general.alignment", "8")] })), /general.alignment has value type STRING/);
    // A valid non-default alignment is honoured.
    const f = readGguf(file(ggufBytes({ kvs: [kvU32("general.alignment", 64)], tensors: [oneF32("t", [8])], data: Buffer.alloc(32), alignment: 64 })));
    assert.equal(f.alignment, 64);
    assert.equal(f.tensorDataOffset % 64, 0);
  });

  it("refuses to dequantize an unsupported type, naming the file and tensor", () => {
    const p = file(ggufBytes({ tensors: [oneF32("q8k", [256], 15 /* Q8_K */)], data: Buffer.alloc(292) }));
    const f = readGguf(p);
    assert.equal(readTensorBytes(f, "q8k").length, 292);
    assert.throws(
      () => readTensorF32(f, "q8k"),
      (e: unknown) => e instanceof GgufError && e.message === `${p}: tensor 'q8k' has unsupported tensor type Q8_K`,
    );
    // An IQ2_XXS model (66-byte blocks of 256) reads and lists; only dequantizing it is refused.
    const p2 = file(ggufBytes({ tensors: [oneF32("iq", [512], 16 /* IQ2_XXS */)], data: Buffer.alloc(132) }));
    const f2 = readGguf(p2);
    assert.equal(f2.tensors[0].byteLength, 132);
    assert.throws(
      () => readTensorF32(f2, "iq"),
      (e: unknown) => e instanceof GgufError && /unsupported tensor type IQ2_XXS/.test(e.message),
    );
  });

  it("reports a file that shrank after its header was read", () => {
    const p = file(smallValidGguf());
    const f = readGguf(p);
    fs.truncateSync(p, f.tensorDataOffset + 40);
    assert.throws(
      () => readTensorBytes(f, "b.weight"),
      (e: unknown) => e instanceof GgufError && /truncated/.test(e.message),
    );
  });

  it("never throws anything but GgufError on randomly corrupted files", () => {
    const whole = smallValidGguf();
    let s = 12345;
    const rnd = (m: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return (s >>> 8) % m;
    };
    const p = path.join(dir, "fuzz.gguf");
    let parsed = 0;
    let refused = 0;
    for (let i = 0; i < 400; i++) {
      const b = Buffer.from(whole);
      for (let k = 0, flips = 1 + rnd(4); k < flips; k++) b[rnd(b.length)] = rnd(256);
      fs.writeFileSync(p, b);
      try {
        const f = readGguf(p);
        for (const t of f.tensors) readTensorF32(f, t);
        parsed++;
      } catch (e) {
        assert.ok(e instanceof GgufError, `iteration ${i}: ${String(e)}`);
        refused++;
      }
    }
    assert.ok(parsed > 0 && refused > 0, `parsed ${parsed}, refused ${refused}`);
  });
});
