/**
 * Quantizers against hand-made blocks with known bytes (ggml's documented layouts), and
 * against the reader's dequantizer (models/gguf/dequant.ts, written separately) on random data.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Prng } from "../../models/tiny/prng.js";
import { dequantize } from "../../models/gguf/dequant.js";
import { quantizeQ4_K, quantizeQ8_0 } from "../../models/gguf/quantize.js";
import { GgmlType, GgufError } from "../../models/gguf/types.js";

function gaussian(n: number, seed: number, std = 1): Float32Array {
  const rng = new Prng(seed);
  return Float32Array.from({ length: n }, () => std * rng.normal());
}

function relRmsError(x: Float32Array, y: Float32Array): number {
  let e = 0,
    s = 0;
  for (let i = 0; i < x.length; i++) {
    e += (x[i] - y[i]) ** 2;
    s += x[i] ** 2;
  }
  return Math.sqrt(e / s);
}

describe("Q8_0", () => {
  it("encodes a hand-computed block", () => {
    const x = Float32Array.from({ length: 32 }, (_, i) => (i - 16) / 4); // amax 4 → d = 4/127
    const b = quantizeQ8_0(x);
    assert.equal(b.length, 34);
    assert.equal(b[0] | (b[1] << 8), 0x2808, "d = f16(4/127) = 2^-5 * (1 + 8/1024)");
    const q = Int8Array.from(b.subarray(2));
    assert.equal(q[0], -127); // -4 / d
    assert.equal(q[1], -119); // -3.75 * 31.75 = -119.06
    assert.equal(q[8], -64, "-63.5 rounds away from zero, as C's roundf"); // -2 * 31.75
    assert.equal(q[16], 0);
    assert.equal(q[31], 119);
  });

  it("encodes an all-zero block as zeros", () => {
    assert.ok(quantizeQ8_0(new Float32Array(64)).every((v) => v === 0));
  });

  it("dequantizes within half a step of each block", () => {
    const x = gaussian(32 * 64, 7, 0.3);
    const y = dequantize(GgmlType.Q8_0, quantizeQ8_0(x), x.length);
    for (let b = 0; b < 64; b++) {
      const blk = x.subarray(b * 32, b * 32 + 32);
      const d = Math.max(...blk.map(Math.abs)) / 127;
      for (let i = 0; i < 32; i++) assert.ok(Math.abs(y[b * 32 + i] - blk[i]) <= d * 0.5 + d * 1e-3 * 127, `block ${b} item ${i}`);
    }
    assert.ok(relRmsError(x, y) < 0.01);
  });

  it("rejects a partial block", () => {
    assert.throws(
      () => quantizeQ8_0(new Float32Array(33)),
      (e: Error) => e instanceof GgufError && /33 values is not a multiple of the block size 32/.test(e.message),
    );
  });
});

describe("Q4_K", () => {
  // A super-block that Q4_K can represent exactly: d = 2^-6, dmin = 2^-7, chosen 6-bit
  // scales/mins (including 63 and values >= 16, which use the high-bit packing) and levels
  // covering 0..15 in every sub-block.
  const ls = [63, 1, 17, 32, 5, 48, 63, 10];
  const lm = [0, 63, 7, 20, 33, 63, 1, 40];
  const level = (j: number, l: number) => (l * 7 + j) % 16;
  const exact = Float32Array.from({ length: 256 }, (_, i) => {
    const j = Math.floor(i / 32);
    return 2 ** -6 * ls[j] * level(j, i % 32) - 2 ** -7 * lm[j];
  });

  it("encodes a representable block to the expected bytes", () => {
    const b = quantizeQ4_K(exact);
    assert.equal(b.length, 144);
    assert.equal(b[0] | (b[1] << 8), 0x2400, "d = 2^-6");
    assert.equal(b[2] | (b[3] << 8), 0x2000, "dmin = 2^-7");
    // Packed by hand from ls/lm following ggml's get_scale_min_k4 layout.
    assert.deepEqual([...b.subarray(4, 16)], [63, 193, 209, 32, 128, 255, 7, 148, 21, 240, 31, 138]);
    assert.equal(b[16], level(0, 0) | (level(1, 0) << 4));
    assert.equal(b[17], 0x87, "levels 7 (sub-block 0) and 8 (sub-block 1)");
    assert.equal(b[48], 0x32, "second 64-chunk: sub-blocks 2 and 3");
    assert.equal(b[143], level(6, 31) | (level(7, 31) << 4));
  });

  it("round-trips the representable block exactly through the reader's dequant", () => {
    assert.deepEqual(dequantize(GgmlType.Q4_K, quantizeQ4_K(exact), 256), exact);
  });

  it("keeps random weights within 4-bit accuracy", () => {
    const x = gaussian(256 * 32, 11, 0.05);
    const err = relRmsError(x, dequantize(GgmlType.Q4_K, quantizeQ4_K(x), x.length));
    // 16 levels over a sub-block's range (~5σ): step ≈ σ/3, rms error ≈ step/√12 ≈ 0.1σ; the fit beats that.
    assert.ok(err < 0.1, `relative rms error ${err}`);
    assert.ok(err > 0.01, `suspiciously exact: ${err}`);
  });

  it("without the search, takes each sub-block's range: valid Q4_K, less accurate than the fit", () => {
    const x = gaussian(256 * 32, 11, 0.05);
    const fast = quantizeQ4_K(x, { search: false });
    assert.notDeepEqual(fast, quantizeQ4_K(x));
    const err = relRmsError(x, dequantize(GgmlType.Q4_K, fast, x.length));
    const fitted = relRmsError(x, dequantize(GgmlType.Q4_K, quantizeQ4_K(x), x.length));
    // Range-based: step = range/15 ≈ 5σ/15, rms error ≈ step/√12 ≈ 0.1σ (plus 6-bit scale rounding).
    assert.ok(err < 0.13 && err > 0.05, `relative rms error ${err}`);
    assert.ok(err > fitted, `range-based ${err} should not beat the fit ${fitted}`);
    // The representable block has its sub-blocks' ranges on the grid: exact either way.
    assert.deepEqual(dequantize(GgmlType.Q4_K, quantizeQ4_K(exact, { search: false }), 256), exact);
  });

  it("handles constant, all-positive and all-zero blocks", () => {
    for (const v of [0, 0.25, -0.5]) {
      const x = new Float32Array(256).fill(v);
      const y = dequantize(GgmlType.Q4_K, quantizeQ4_K(x), 256);
      for (const e of y) assert.ok(Math.abs(e - v) < 1e-3, `${e} vs ${v}`);
    }
    const pos = Float32Array.from({ length: 256 }, (_, i) => 1 + i / 256);
    assert.ok(relRmsError(pos, dequantize(GgmlType.Q4_K, quantizeQ4_K(pos), 256)) < 0.02);
  });

  it("rejects a partial super-block", () => {
    assert.throws(
      () => quantizeQ4_K(new Float32Array(128)),
      (e: Error) => e instanceof GgufError && /128 values is not a multiple of the block size 256/.test(e.message),
    );
  });
});
