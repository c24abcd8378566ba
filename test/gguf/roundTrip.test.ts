import assert from "node:assert/strict";
import path from "node:path";
import { describe, it } from "node:test";
import { quantizeQ4_K, quantizeQ8_0 } from "../../models/gguf/quantize.js";
import { readGguf, readTensorBytes, readTensorF32 } from "../../models/gguf/reader.js";
import { GgmlType, GgufValueType, type GgufMetaValue } from "../../models/gguf/types.js";
import { f16Bytes, f32Bytes, writeGguf } from "../../models/gguf/writer.js";
import { tempDir } from "../helpers/cli.js";

const dir = tempDir("clawrl-gguf-rt-");

const metadata: Array<[string, GgufMetaValue]> = [
  ["general.architecture", { type: GgufValueType.STRING, value: "llama" }],
  ["t.u8", { type: GgufValueType.UINT8, value: 255 }],
  ["t.i8", { type: GgufValueType.INT8, value: -128 }],
  ["t.u16", { type: GgufValueType.UINT16, value: 65535 }],
  ["t.i16", { type: GgufValueType.INT16, value: -32768 }],
  ["t.u32", { type: GgufValueType.UINT32, value: 4294967295 }],
  ["t.i32", { type: GgufValueType.INT32, value: -2147483648 }],
  ["t.f32", { type: GgufValueType.FLOAT32, value: Math.fround(0.1) }],
  ["t.f64", { type: GgufValueType.FLOAT64, value: 0.1 }],
  ["t.u64", { type: GgufValueType.UINT64, value: 2n ** 64n - 1n }],
  ["t.i64", { type: GgufValueType.INT64, value: -(2n ** 63n) }],
  ["t.bool", { type: GgufValueType.BOOL, value: false }],
  ["t.str", { type: GgufValueType.STRING, value: "héllo ✓ 🦀\n{{ chat }}" }],
  ["t.empty", { type: GgufValueType.STRING, value: "" }],
  ["t.arr.str", { type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: ["<s>", "", "Ġthe", "▁x"] }],
  ["t.arr.f32", { type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32, value: [0, -1.5, Math.fround(1e-3)] }],
  ["t.arr.i32", { type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, value: [1, -2, 3] }],
  ["t.arr.u64", { type: GgufValueType.ARRAY, itemType: GgufValueType.UINT64, value: [0n, 2n ** 40n] }],
  ["t.arr.bool", { type: GgufValueType.ARRAY, itemType: GgufValueType.BOOL, value: [true, false] }],
  ["t.arr.empty", { type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: [] }],
];

function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32 - 0.5) * 4;
  }
  return out;
}

describe("GGUF writer → reader round trip", () => {
  for (const alignment of [undefined, 64]) {
    it(`reads back every metadata type and F32/F16/Q8_0/Q4_K tensors (alignment ${alignment ?? "default"})`, () => {
      const a = values(3 * 5, 1);
      const h = values(7, 2);
      const q8 = values(64 * 2, 3);
      const q4 = values(256 * 2, 4);
      const p = path.join(dir, `rt-${alignment ?? 32}.gguf`);
      const tensors = [
        { name: "a.weight", dims: [3, 5], type: GgmlType.F32, data: f32Bytes(a) },
        { name: "h.weight", dims: [7], type: GgmlType.F16, data: f16Bytes(h) },
        { name: "q8.weight", dims: [64, 2], type: GgmlType.Q8_0, data: quantizeQ8_0(q8) },
        { name: "q4.weight", dims: [256, 2], type: GgmlType.Q4_K, data: quantizeQ4_K(q4) },
      ];
      writeGguf(p, { metadata, tensors, alignment });
      const f = readGguf(p);

      assert.equal(f.version, 3);
      assert.equal(f.alignment, alignment ?? 32);
      const expectedMeta = new Map(metadata);
      if (alignment !== undefined) {
        const al = f.metadata.get("general.alignment");
        assert.ok(al && Number(al.value) === alignment);
        f.metadata.delete("general.alignment");
      }
      assert.deepEqual(f.metadata, expectedMeta);

      assert.deepEqual(
        f.tensors.map((t) => [t.name, t.dims, t.type]),
        tensors.map((t) => [t.name, t.dims, t.type]),
      );
      for (const t of tensors) assert.deepEqual(readTensorBytes(f, t.name), t.data, t.name);
      for (const t of f.tensors) assert.equal((f.tensorDataOffset + t.offset) % f.alignment, 0);
      assert.deepEqual(readTensorF32(f, "a.weight"), a);
      // F16 keeps 11 significant bits: within half an ulp of 2^-10 relative.
      const hb = readTensorF32(f, "h.weight");
      for (let i = 0; i < h.length; i++) assert.ok(Math.abs(hb[i] - h[i]) <= Math.abs(h[i]) * 2 ** -11 + 1e-7, `h[${i}]`);
      // Quantized weights come back close to the originals (bounds well above each format's error).
      const maxErr = (x: Float32Array, y: Float32Array) => x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);
      assert.ok(maxErr(readTensorF32(f, "q8.weight"), q8) < 2 / 127, "Q8_0 error");
      assert.ok(maxErr(readTensorF32(f, "q4.weight"), q4) < 0.35, "Q4_K error");
    });
  }
});
