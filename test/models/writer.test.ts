/**
 * Writer details the reader round trip (test/gguf/roundTrip.test.ts) does not show: exact
 * byte layout, f16 rounding, validation, atomic replacement.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { quantizeQ8_0 } from "../../models/gguf/quantize.js";
import { GgmlType, GgufError, GgufValueType, type GgufMetaValue } from "../../models/gguf/types.js";
import { encodeGguf, f16BitsToF32, f16Bytes, f32Bytes, f32ToF16Bits, writeGguf, writeGgufStream } from "../../models/gguf/writer.js";
import { tempDir } from "../helpers/cli.js";

const dir = tempDir("clawrl-writer-");
const str = (value: string) => ({ type: GgufValueType.STRING as const, value });

describe("f16 encoding", () => {
  it("encodes exactly representable values exactly", () => {
    const cases: Array<[number, number]> = [
      [0, 0x0000],
      [-0, 0x8000],
      [1, 0x3c00],
      [-2, 0xc000],
      [0.5, 0x3800],
      [65504, 0x7bff],
      [2 ** -14, 0x0400],
      [2 ** -24, 0x0001],
      [2 ** -14 - 2 ** -24, 0x03ff],
      [Infinity, 0x7c00],
      [-Infinity, 0xfc00],
    ];
    for (const [x, bits] of cases) assert.equal(f32ToF16Bits(x), bits, `f16(${x})`);
    assert.equal(f32ToF16Bits(NaN) & 0x7c00, 0x7c00);
    assert.ok(f32ToF16Bits(NaN) & 0x3ff, "NaN keeps a mantissa bit");
  });

  it("rounds to nearest, ties to even", () => {
    const ulp = 2 ** -10; // spacing of f16 in [1, 2)
    assert.equal(f32ToF16Bits(1 + ulp / 2), 0x3c00, "tie rounds down to even");
    assert.equal(f32ToF16Bits(1 + (3 * ulp) / 2), 0x3c02, "tie rounds up to even");
    assert.equal(f32ToF16Bits(1 + ulp / 2 + 2 ** -20), 0x3c01, "above the tie rounds up");
    assert.equal(f32ToF16Bits(65520), 0x7c00, "halfway past max overflows to inf");
    assert.equal(f32ToF16Bits(65519), 0x7bff);
    assert.equal(f32ToF16Bits(2 ** -25), 0x0000, "subnormal tie to even (0)");
    assert.equal(f32ToF16Bits(3 * 2 ** -25), 0x0002, "subnormal tie to even (2)");
    assert.equal(f32ToF16Bits(2 ** -26), 0x0000);
    assert.equal(f32ToF16Bits(2 ** -14 - 2 ** -25), 0x0400, "rounds up into the normals");
  });

  it("is the nearest f16 for every sampled value (checked by decoding neighbours)", () => {
    for (let i = 0; i < 2000; i++) {
      const x = Math.fround(Math.sin(i * 12.9898) * 10 ** ((i % 11) - 6)); // within ±1e4: no overflow
      const h = f32ToF16Bits(x);
      const err = Math.abs(f16BitsToF32(h) - x);
      for (const n of [h - 1, h + 1]) {
        if ((n & 0x7c00) === 0x7c00 || n < 0 || (n & 0x7fff) === 0x7fff) continue;
        if (((n ^ h) & 0x8000) !== 0) continue;
        assert.ok(err <= Math.abs(f16BitsToF32(n) - x), `f16(${x}) = ${h.toString(16)} not nearest`);
      }
    }
  });

  it("writes little-endian bytes", () => {
    assert.deepEqual([...f16Bytes(new Float32Array([1, -2]))], [0x00, 0x3c, 0x00, 0xc0]);
    assert.deepEqual([...f32Bytes(new Float32Array([1]))], [0x00, 0x00, 0x80, 0x3f]);
  });
});

describe("GGUF layout", () => {
  it("writes header, metadata, tensor infos and aligned data byte for byte", () => {
    const buf = encodeGguf({
      metadata: [["a", { type: GgufValueType.UINT8, value: 7 }]],
      tensors: [
        { name: "x", dims: [3], type: GgmlType.F32, data: f32Bytes(new Float32Array([1, 2, 3])) },
        { name: "y", dims: [1], type: GgmlType.F32, data: f32Bytes(new Float32Array([4])) },
      ],
    });
    const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    assert.equal(buf.subarray(0, 4).toString("latin1"), "GGUF");
    assert.equal(v.getUint32(4, true), 3);
    assert.equal(v.getBigUint64(8, true), 2n);
    assert.equal(v.getBigUint64(16, true), 1n);
    let o = 24;
    assert.equal(v.getBigUint64(o, true), 1n);
    o += 8;
    assert.equal(buf.toString("latin1", o, o + 1), "a");
    o += 1;
    assert.equal(v.getUint32(o, true), GgufValueType.UINT8);
    o += 4;
    assert.equal(v.getUint8(o), 7);
    o += 1;
    // tensor "x": name, n_dims, dims, type, offset
    assert.equal(v.getBigUint64(o, true), 1n);
    o += 8 + 1;
    assert.equal(v.getUint32(o, true), 1);
    o += 4;
    assert.equal(v.getBigUint64(o, true), 3n);
    o += 8;
    assert.equal(v.getUint32(o, true), GgmlType.F32);
    o += 4;
    assert.equal(v.getBigUint64(o, true), 0n);
    o += 8;
    o += 8 + 1 + 4 + 8 + 4;
    assert.equal(v.getBigUint64(o, true), 32n, "second tensor starts at the next 32-byte boundary");
    o += 8;
    const dataStart = Math.ceil(o / 32) * 32;
    assert.ok(
      buf.subarray(o, dataStart).every((b) => b === 0),
      "padding is zeros",
    );
    assert.equal(v.getFloat32(dataStart + 8, true), 3);
    assert.equal(v.getFloat32(dataStart + 32, true), 4);
    assert.equal(buf.length % 32, 0);
  });

  it("honours a custom alignment and records it as general.alignment", () => {
    const buf = encodeGguf({ metadata: [], alignment: 128, tensors: [{ name: "x", dims: [1], type: GgmlType.F32, data: f32Bytes(new Float32Array([1])) }] });
    assert.ok(buf.includes(Buffer.from("general.alignment")));
    assert.equal(buf.length % 128, 0);
    assert.equal(buf.readFloatLE(buf.length - 128), 1);
  });
});

describe("GGUF writer validation", () => {
  const t = (over: Partial<{ dims: number[]; type: GgmlType; data: Uint8Array; name: string }>) => ({
    name: "w",
    dims: [4],
    type: GgmlType.F32,
    data: new Uint8Array(16),
    ...over,
  });
  const cases: Array<[string, Parameters<typeof encodeGguf>[0], RegExp]> = [
    ["short data", { metadata: [], tensors: [t({ data: new Uint8Array(12) })] }, /tensor 'w': data is 12 bytes, dims 4 of F32 need 16/],
    [
      "partial block",
      { metadata: [], tensors: [t({ dims: [48], type: GgmlType.Q8_0, data: new Uint8Array(51) })] },
      /row length 48 is not a multiple of Q8_0's block size 32/,
    ],
    ["zero dim", { metadata: [], tensors: [t({ dims: [4, 0] })] }, /bad dim 0/],
    ["five dims", { metadata: [], tensors: [t({ dims: [1, 1, 1, 1, 4] })] }, /needs 1 to 4 dims/],
    ["unknown type", { metadata: [], tensors: [t({ type: 99 as GgmlType })] }, /unsupported type 99/],
    ["too long a tensor name", { metadata: [], tensors: [t({ name: "n".repeat(64) })] }, /tensor name 'n+' must be 1 to 63 bytes/],
    ["duplicate tensor", { metadata: [], tensors: [t({}), t({})] }, /tensor 'w' appears twice/],
    [
      "duplicate key",
      {
        metadata: [
          ["k", str("a")],
          ["k", str("b")],
        ],
        tensors: [],
      },
      /metadata key 'k' appears twice/,
    ],
    ["u8 out of range", { metadata: [["k", { type: GgufValueType.UINT8, value: 256 }]], tensors: [] }, /'k': 256 is out of range for UINT8/],
    ["wrong value kind", { metadata: [["k", { type: GgufValueType.UINT64, value: 3 as unknown as bigint }]], tensors: [] }, /'k': expected a bigint/],
    [
      "bad array item",
      { metadata: [["k", { type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: ["a", 1] }]], tensors: [] },
      /'k': expected a string/,
    ],
    ["alignment not power of two", { metadata: [], tensors: [], alignment: 48 }, /alignment must be a power of two/],
    ["alignment disagrees", { metadata: [["general.alignment", { type: GgufValueType.UINT32, value: 64 }]], tensors: [], alignment: 32 }, /disagrees/],
  ];
  for (const [what, spec, re] of cases) {
    it(`rejects ${what}`, () => {
      assert.throws(
        () => encodeGguf(spec, "m.gguf"),
        (err: Error) => err instanceof GgufError && re.test(err.message) && err.message.startsWith("m.gguf: "),
      );
    });
  }

  it("leaves an existing file untouched and no temp file behind when input is bad", () => {
    const file = path.join(dir, "keep.gguf");
    writeGguf(file, { metadata: [["general.name", str("first")]], tensors: [] });
    const before = fs.readFileSync(file);
    assert.throws(() => writeGguf(file, { metadata: [], tensors: [t({ data: new Uint8Array(3) })] }), GgufError);
    assert.deepEqual(fs.readFileSync(file), before);
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.includes("keep")),
      ["keep.gguf"],
    );
  });

  it("replaces an existing file atomically with the new content", () => {
    const file = path.join(dir, "replace.gguf");
    writeGguf(file, { metadata: [["general.name", str("first")]], tensors: [] });
    writeGguf(file, { metadata: [["general.name", str("second")]], tensors: [] });
    assert.ok(fs.readFileSync(file).includes(Buffer.from("second")));
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.includes("replace")),
      ["replace.gguf"],
    );
  });
});

describe("streaming GGUF writer", () => {
  const q8 = (n: number, seed: number) => {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = Math.sin(i * 0.37 + seed);
    return quantizeQ8_0(v);
  };
  const tensors = [
    { name: "a", dims: [64, 3], type: GgmlType.Q8_0, data: q8(192, 1) },
    { name: "b", dims: [5], type: GgmlType.F32, data: f32Bytes(new Float32Array([1, 2, 3, 4, 5])) },
    { name: "c", dims: [32, 9], type: GgmlType.Q8_0, data: q8(288, 2) },
  ];
  const metadata: Array<[string, GgufMetaValue]> = [
    ["general.name", str("stream")],
    ["n", { type: GgufValueType.UINT32, value: 3 }],
  ];
  /** The tensor's bytes in uneven chunks (one empty), as a generator yields them. */
  const chunked = (data: Uint8Array) => () => [data.subarray(0, 7), data.subarray(7, 7), data.subarray(7, 40), data.subarray(40)];

  for (const alignment of [32, 64]) {
    it(`writes the same bytes as encodeGguf, chunk by chunk (alignment ${alignment}), reporting each tensor`, () => {
      const file = path.join(dir, `stream-${alignment}.gguf`);
      const seen: string[] = [];
      const size = writeGgufStream(file, { metadata, alignment, tensors: tensors.map((t) => ({ ...t, chunks: chunked(t.data) })) }, (p) => {
        seen.push(`${p.tensor}/${p.tensors} ${p.name}`);
        assert.ok(p.bytesWritten <= p.totalBytes);
      });
      const expected = encodeGguf({ metadata, alignment, tensors });
      assert.deepEqual(fs.readFileSync(file), expected);
      assert.equal(size, expected.length);
      assert.deepEqual(seen, ["1/3 a", "2/3 b", "3/3 c"]);
    });
  }

  it("rejects a tensor whose chunks are short or long, leaving the target untouched and no temp file", () => {
    const file = path.join(dir, "stream-bad.gguf");
    writeGguf(file, { metadata: [["general.name", str("first")]], tensors: [] });
    const before = fs.readFileSync(file);
    const short = tensors.map((t, i) => ({ ...t, chunks: () => [i === 2 ? t.data.subarray(1) : t.data] }));
    assert.throws(() => writeGgufStream(file, { metadata, tensors: short }), /tensor 'c': data is 305 bytes, dims 32x9 of Q8_0 need 306/);
    const long = tensors.map((t, i) => ({ ...t, chunks: () => [t.data, ...(i === 0 ? [new Uint8Array(1)] : [])] }));
    assert.throws(() => writeGgufStream(file, { metadata, tensors: long }), /tensor 'a': data is more than 205 bytes, dims 64x3 of Q8_0 need 204/);
    assert.deepEqual(fs.readFileSync(file), before);
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.includes("stream-bad")),
      ["stream-bad.gguf"],
    );
  });
});
