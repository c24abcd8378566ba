/**
 * Dequantization against values computed here, independently of models/gguf/dequant.ts:
 * blocks are assembled bit by bit from chosen scales and quants following ggml's documented
 * block layouts, and the expected weights come from the format's formula (or are literals
 * worked out by hand).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { dequantize, f16ToF32 } from "../../models/gguf/dequant.js";
import { GgmlType, GgufError } from "../../models/gguf/types.js";

/** f16 bit patterns of exactly known values. */
const H = { one: 0x3c00, half: 0x3800, two: 0x4000, quarter: 0x3400, negOne: 0xbc00, d3_64: 0x2a00 /* 0.046875 */, d1_16: 0x2c00 /* 0.0625 */ };

/** Deterministic small integers (xorshift), so blocks are not trivially regular. */
function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return (n: number) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
}

function putU16(b: Uint8Array, at: number, v: number) {
  b[at] = v & 0xff;
  b[at + 1] = v >> 8;
}

function f32s(values: number[]): Float32Array {
  return Float32Array.from(values, (v) => Math.fround(v));
}

describe("f16 conversion", () => {
  it("decodes normal, subnormal, zero, infinite and NaN patterns", () => {
    assert.equal(f16ToF32(0x3c00), 1);
    assert.equal(f16ToF32(0xc000), -2);
    assert.equal(f16ToF32(0x3555), 0.333251953125);
    assert.equal(f16ToF32(0x7bff), 65504);
    assert.equal(f16ToF32(0x0001), 2 ** -24);
    assert.equal(f16ToF32(0x03ff), 1023 * 2 ** -24);
    assert.equal(f16ToF32(0x0400), 2 ** -14);
    assert.equal(f16ToF32(0x0000), 0);
    assert.ok(Object.is(f16ToF32(0x8000), -0));
    assert.equal(f16ToF32(0x7c00), Infinity);
    assert.equal(f16ToF32(0xfc00), -Infinity);
    assert.ok(Number.isNaN(f16ToF32(0x7e00)));
  });
});

describe("dequantize plain float types", () => {
  it("F32 reads little-endian floats, also from an unaligned view", () => {
    const src = new Uint8Array(1 + 12);
    const dv = new DataView(src.buffer);
    [1.5, -2.25, 3e-7].forEach((v, i) => dv.setFloat32(1 + 4 * i, v, true));
    assert.deepEqual(dequantize(GgmlType.F32, src.subarray(1), 3), f32s([1.5, -2.25, 3e-7]));
  });

  it("F16 decodes each pair of bytes, aligned or not", () => {
    const patterns = [0x3c00, 0xc000, 0x3555, 0x0001, 0x7bff, 0x0000];
    const expected = f32s([1, -2, 0.333251953125, 2 ** -24, 65504, 0]);
    const b = new Uint8Array(1 + 2 * patterns.length);
    patterns.forEach((p, i) => putU16(b, 1 + 2 * i, p));
    assert.deepEqual(dequantize(GgmlType.F16, b.subarray(1), patterns.length), expected);
    assert.deepEqual(dequantize(GgmlType.F16, b.slice(1), patterns.length), expected);
  });

  it("BF16 is the upper half of an f32", () => {
    const b = new Uint8Array(8);
    [0x3f80, 0xc000, 0x4049, 0x0000].forEach((p, i) => putU16(b, 2 * i, p));
    assert.deepEqual(dequantize(GgmlType.BF16, b, 4), f32s([1, -2, 3.140625, 0]));
  });
});

describe("dequantize 32-weight block types", () => {
  it("Q8_0: a hand-worked block, w = d·q", () => {
    const b = new Uint8Array(34);
    putU16(b, 0, H.half);
    const qs = new Int8Array(b.buffer, 2, 32);
    qs[0] = 1;
    qs[1] = -1;
    qs[2] = 127;
    qs[3] = -128;
    qs[31] = 10;
    const exp = new Array(32).fill(0);
    exp[0] = 0.5;
    exp[1] = -0.5;
    exp[2] = 63.5;
    exp[3] = -64;
    exp[31] = 5;
    assert.deepEqual(dequantize(GgmlType.Q8_0, b, 32), f32s(exp));
  });

  it("Q8_0: three blocks with different scales", () => {
    const r = rng(8);
    const scales = [H.d3_64, H.negOne, H.two];
    const dv = [0.046875, -1, 2];
    const b = new Uint8Array(34 * 3);
    const exp: number[] = [];
    for (let k = 0; k < 3; k++) {
      putU16(b, 34 * k, scales[k]);
      for (let j = 0; j < 32; j++) {
        const q = r(256) - 128;
        b[34 * k + 2 + j] = q & 0xff;
        exp.push(dv[k] * q);
      }
    }
    assert.deepEqual(dequantize(GgmlType.Q8_0, b, 96), f32s(exp));
  });

  it("Q4_0: low nibbles are weights 0-15, high nibbles 16-31, w = d·(q−8)", () => {
    const b = new Uint8Array(18);
    putU16(b, 0, H.two);
    b[2] = 0xf0; // weight 0: q=0 → -16; weight 16: q=15 → 14
    b[3] = 0x98; // weight 1: q=8 → 0;   weight 17: q=9 → 2
    for (let j = 2; j < 16; j++) b[2 + j] = 0x88; // all zeros
    const exp = new Array(32).fill(0);
    exp[0] = -16;
    exp[16] = 14;
    exp[1] = 0;
    exp[17] = 2;
    assert.deepEqual(dequantize(GgmlType.Q4_0, b, 32), f32s(exp));
  });

  it("Q4_0 and Q4_1: two random blocks each against the formula", () => {
    const r = rng(41);
    for (const type of [GgmlType.Q4_0, GgmlType.Q4_1]) {
      const size = type === GgmlType.Q4_0 ? 18 : 20;
      const b = new Uint8Array(size * 2);
      const exp: number[] = [];
      const ds = [0.046875, -1];
      const ms = [0.5, -0.25];
      for (let k = 0; k < 2; k++) {
        const o = size * k;
        putU16(b, o, k === 0 ? H.d3_64 : H.negOne);
        if (type === GgmlType.Q4_1) putU16(b, o + 2, k === 0 ? H.half : 0xb400 /* -0.25 */);
        const qOff = o + (type === GgmlType.Q4_0 ? 2 : 4);
        const q = Array.from({ length: 32 }, () => r(16));
        for (let j = 0; j < 16; j++) b[qOff + j] = q[j] | (q[j + 16] << 4);
        for (let j = 0; j < 32; j++) exp.push(type === GgmlType.Q4_0 ? ds[k] * (q[j] - 8) : ds[k] * q[j] + ms[k]);
      }
      assert.deepEqual(dequantize(type, b, 64), f32s(exp), GgmlType[type]);
    }
  });

  it("Q4_1: a hand-worked block, w = d·q + m", () => {
    const b = new Uint8Array(20);
    putU16(b, 0, H.quarter);
    putU16(b, 2, H.negOne);
    b[4] = 0x4f; // weight 0: q=15 → 2.75; weight 16: q=4 → 0
    const exp = new Array(32).fill(-1);
    exp[0] = 2.75;
    exp[16] = 0;
    assert.deepEqual(dequantize(GgmlType.Q4_1, b, 32), f32s(exp));
  });
});

describe("dequantize 5-bit block types", () => {
  it("Q5_0: a hand-worked block, fifth bit j of qh, w = d·(q−16)", () => {
    const b = new Uint8Array(22);
    putU16(b, 0, H.half);
    // qh = 0x80010001: bits 0, 16 and 31 set → weights 0, 16 and 31 get +16.
    b[2] = 0x01;
    b[4] = 0x01;
    b[5] = 0x80;
    b[6 + 0] = 0x3f; // weight 0: low 15 (+16 → 31); weight 16: high 3 (+16 → 19)
    b[6 + 15] = 0xa0; // weight 15: 0; weight 31: 10 (+16 → 26)
    const exp = new Array(32).fill(-8); // q = 0 → 0.5·(−16)
    exp[0] = 0.5 * (31 - 16);
    exp[16] = 0.5 * (19 - 16);
    exp[15] = -8;
    exp[31] = 0.5 * (26 - 16);
    assert.deepEqual(dequantize(GgmlType.Q5_0, b, 32), f32s(exp));
  });

  it("Q5_1: a hand-worked block, w = d·q + m", () => {
    const b = new Uint8Array(24);
    putU16(b, 0, H.quarter);
    putU16(b, 2, H.negOne);
    b[4 + 1] = 0x02; // qh bit 9 → weight 9 gets +16
    b[8 + 9] = 0x07; // weight 9: 7 + 16 = 23; weight 25: 0
    const exp = new Array(32).fill(-1);
    exp[9] = 0.25 * 23 - 1;
    assert.deepEqual(dequantize(GgmlType.Q5_1, b, 32), f32s(exp));
  });

  for (const type of [GgmlType.Q5_0, GgmlType.Q5_1]) {
    it(`${GgmlType[type]}: three random blocks against the formula`, () => {
      const r = rng(50 + type);
      const size = type === GgmlType.Q5_0 ? 22 : 24;
      const b = new Uint8Array(3 * size);
      const ds = [0.046875, -1, 2];
      const ms = [0.5, -0.25, 1];
      const mBits = [H.half, 0xb400, H.one];
      const dBits = [H.d3_64, H.negOne, H.two];
      const exp: number[] = [];
      for (let k = 0; k < 3; k++) {
        const o = k * size;
        putU16(b, o, dBits[k]);
        if (type === GgmlType.Q5_1) putU16(b, o + 2, mBits[k]);
        const qh = o + (type === GgmlType.Q5_0 ? 2 : 4);
        for (let j = 0; j < 32; j++) {
          const q = r(32);
          b[qh + 4 + (j & 15)] |= j < 16 ? q & 15 : (q & 15) << 4;
          if (q & 16) b[qh + (j >> 3)] |= 1 << (j & 7);
          exp.push(type === GgmlType.Q5_0 ? ds[k] * (q - 16) : ds[k] * q + ms[k]);
        }
      }
      assert.deepEqual(dequantize(type, b, 96), f32s(exp));
    });
  }
});

/**
 * Packs eight 6-bit scales and mins into the 12 bytes of a Q4_K/Q5_K super-block:
 * sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 keep
 * their low 4 bits in bytes 8-11 (scale low nibble, min high nibble) and their top 2 bits in
 * the top bits of bytes 0-3 (scale) and 4-7 (min).
 */
function packScaleMin(sc: number[], mn: number[]): Uint8Array {
  const out = new Uint8Array(12);
  for (let j = 0; j < 4; j++) {
    out[j] = sc[j] | ((sc[j + 4] >> 4) << 6);
    out[j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6);
    out[j + 8] = (sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4);
  }
  return out;
}

describe("dequantize K-quant super-blocks", () => {
  it("Q2_K: a hand-worked super-block, w = d·sc·q − dmin·m per 16-weight group", () => {
    const b = new Uint8Array(84);
    putU16(b, 80, H.half); // d
    putU16(b, 82, H.quarter); // dmin
    b[0] = 0x23; // group 0: scale 3, min 2
    b[2] = 0x01; // group 2 (weights 32-47): scale 1
    b[4] = 0x02; // group 4 (64-79): scale 2
    b[5] = 0x71; // group 5 (80-95): scale 1, min 7
    b[6] = 0x03; // group 6 (96-111): scale 3
    b[16 + 0] = 0b11_10_01_00; // byte 0 carries weights 0, 32, 64, 96: q = 0, 1, 2, 3
    b[16 + 16 + 3] = 0b0011_0000; // byte 19, plane 2: weight 64 + 16 + 3 = 83, q = 3
    const exp = new Array(256).fill(0);
    for (let l = 0; l < 16; l++) exp[l] = -0.5; // 0.5·3·0 − 0.25·2
    for (let l = 80; l < 96; l++) exp[l] = -1.75; // 0 − 0.25·7
    exp[32] = 0.5;
    exp[64] = 2;
    exp[96] = 4.5;
    exp[83] = 0.5 * 1 * 3 - 1.75;
    assert.deepEqual(dequantize(GgmlType.Q2_K, b, 256), f32s(exp));
  });

  it("Q3_K: a hand-worked super-block, signed 6-bit scales and the hmask bit", () => {
    const b = new Uint8Array(110);
    putU16(b, 108, H.half);
    // Every group's stored scale 32 (value 0): low nibbles 0, top bits 0b10 everywhere.
    b.fill(0xaa, 96 + 8, 96 + 12);
    b[96 + 0] = 0x03; // group 0: stored 35 = 0b10_0011 → scale 3
    b[96 + 1] = 0x40; // group 9 low bits 4 (high nibble of byte 1)
    b[96 + 9] = 0x9a; // group 9 top bits 0b01 (byte 8 + 9%4, bits 4-5): stored 20 → scale −12
    b[0] |= 1; // hmask bit 0 of weight 0 set: q = lo
    b[32 + 0] = 2; // weight 0 lo = 2 → q = 2
    b[32 + 1] = 1; // weight 1 lo = 1, hmask clear → q = −3
    b[22] |= 1 << 4; // weight 128 + 22 = 150 (half 1, plane 0 → hmask bit 4)
    b[64 + 22] = 3; // its lo = 3 → q = 3
    const exp: number[] = [];
    for (let w = 0; w < 256; w++) exp.push(0.5 * 0 * -4); // scale 0, q = 0 − 4
    for (let l = 0; l < 16; l++) exp[l] = 0.5 * 3 * -4;
    for (let l = 144; l < 160; l++) exp[l] = 0.5 * -12 * -4;
    exp[0] = 0.5 * 3 * 2;
    exp[1] = 0.5 * 3 * -3;
    exp[150] = 0.5 * -12 * 3;
    assert.deepEqual(dequantize(GgmlType.Q3_K, b, 256), f32s(exp));
  });

  it("Q2_K and Q3_K: two random super-blocks each against the formula", () => {
    const r = rng(23);
    for (const type of [GgmlType.Q2_K, GgmlType.Q3_K]) {
      const size = type === GgmlType.Q2_K ? 84 : 110;
      const b = new Uint8Array(2 * size);
      const exp: number[] = [];
      const ds = [0.046875, -1];
      const dmins = [0.5, 0.0625];
      for (let k = 0; k < 2; k++) {
        const o = k * size;
        const sc = Array.from({ length: 16 }, () => (type === GgmlType.Q2_K ? r(16) : r(64) - 32));
        const mn = Array.from({ length: 16 }, () => r(16));
        if (type === GgmlType.Q2_K) {
          putU16(b, o + 80, k === 0 ? H.d3_64 : H.negOne);
          putU16(b, o + 82, k === 0 ? H.half : H.d1_16);
          for (let g = 0; g < 16; g++) b[o + g] = sc[g] | (mn[g] << 4);
        } else {
          putU16(b, o + 108, k === 0 ? H.d3_64 : H.negOne);
          for (let g = 0; g < 16; g++) {
            const u = sc[g] + 32;
            b[o + 96 + (g & 7)] |= g < 8 ? u & 15 : (u & 15) << 4;
            b[o + 96 + 8 + (g & 3)] |= (u >> 4) << (2 * (g >> 2));
          }
        }
        for (let w = 0; w < 256; w++) {
          const h = w >> 7;
          const plane = (w & 127) >> 5;
          const byte = w & 31;
          const g = w >> 4;
          if (type === GgmlType.Q2_K) {
            const q = r(4);
            b[o + 16 + h * 32 + byte] |= q << (2 * plane);
            exp.push(ds[k] * sc[g] * q - dmins[k] * mn[g]);
          } else {
            const q = r(8) - 4; // −4..3: low 2 bits, and the hmask bit set for q >= 0
            b[o + 32 + h * 32 + byte] |= (q & 3) << (2 * plane);
            if (q >= 0) b[o + byte] |= 1 << (4 * h + plane);
            exp.push(ds[k] * sc[g] * q);
          }
        }
      }
      assert.deepEqual(dequantize(type, b, 512), f32s(exp), GgmlType[type]);
    }
  });

  it("Q4_K: a hand-worked super-block", () => {
    const b = new Uint8Array(144);
    putU16(b, 0, H.half); // d
    putU16(b, 2, H.quarter); // dmin
    // Sub-block 0: scale 3, min 2 (bytes 0 and 4); sub-block 5: scale 33 = 0b10_0001, min 18 = 0b01_0010.
    b[4 + 0] = 3;
    b[4 + 4] = 2;
    b[4 + 9] = 0x21; // low nibbles of sub-block 5: scale 1, min 2
    b[4 + 1] = 2 << 6; // top bits of scale 5 (=2) ride on byte 1
    b[4 + 5] = 1 << 6; // top bits of min 5 (=1) ride on byte 5
    // Sub-block 0 is the low nibbles of qs[0..31]; sub-block 5 the high nibbles of qs[64..95].
    b[16 + 0] = 0x07; // weight 0: q=7
    b[16 + 31] = 0x0f; // weight 31: q=15
    b[16 + 64 + 2] = 0xa0; // weight 5*32+2 = 162: q=10
    const exp = new Array(256).fill(0);
    for (let l = 0; l < 32; l++) exp[l] = -0.5; // 0.5·3·0 − 0.25·2
    exp[0] = 0.5 * 3 * 7 - 0.5; // 10
    exp[31] = 0.5 * 3 * 15 - 0.5; // 22
    for (let l = 0; l < 32; l++) exp[160 + l] = -4.5; // 0 − 0.25·18
    exp[162] = 0.5 * 33 * 10 - 4.5; // 160.5
    assert.deepEqual(dequantize(GgmlType.Q4_K, b, 256), f32s(exp));
  });

  for (const type of [GgmlType.Q4_K, GgmlType.Q5_K]) {
    it(`${GgmlType[type]}: two random super-blocks against the formula`, () => {
      const r = rng(type);
      const size = type === GgmlType.Q4_K ? 144 : 176;
      const b = new Uint8Array(2 * size);
      const exp: number[] = [];
      const ds = [0.046875, 0.0625];
      const dmins = [0.5, -1];
      for (let k = 0; k < 2; k++) {
        const o = k * size;
        putU16(b, o, k === 0 ? H.d3_64 : H.d1_16);
        putU16(b, o + 2, k === 0 ? H.half : H.negOne);
        const sc = Array.from({ length: 8 }, () => r(64));
        const mn = Array.from({ length: 8 }, () => r(64));
        b.set(packScaleMin(sc, mn), o + 4);
        const q = Array.from({ length: 256 }, () => r(type === GgmlType.Q4_K ? 16 : 32));
        const qs = o + (type === GgmlType.Q4_K ? 16 : 48);
        for (let w = 0; w < 256; w++) {
          const s = w >> 5;
          const l = w & 31;
          const byte = qs + (s >> 1) * 32 + l;
          b[byte] |= s % 2 === 0 ? q[w] & 15 : (q[w] & 15) << 4;
          if (type === GgmlType.Q5_K && q[w] & 16) b[o + 16 + l] |= 1 << s; // fifth bit: qh[l] bit s
          exp.push(ds[k] * sc[s] * q[w] - dmins[k] * mn[s]);
        }
      }
      assert.deepEqual(dequantize(type, b, 512), f32s(exp));
    });
  }

  it("Q5_K: the high bit adds 16", () => {
    const b = new Uint8Array(176);
    putU16(b, 0, H.one);
    putU16(b, 2, H.one);
    b.set(packScaleMin([1, 1, 1, 1, 1, 1, 1, 2], [0, 0, 0, 0, 0, 0, 0, 5]), 4);
    b[16 + 3] = 0b1000_0001; // weight 3 (sub-block 0) and weight 7·32+3 = 227 (sub-block 7) get +16
    b[48 + 96 + 3] = 0x50; // weight 227 low bits: 5 (high nibble of the 4th 32-byte run)
    const exp = new Array(256).fill(0);
    for (let l = 0; l < 32; l++) exp[224 + l] = -5;
    exp[3] = 16;
    exp[227] = 2 * (5 + 16) - 5; // 37
    assert.deepEqual(dequantize(GgmlType.Q5_K, b, 256), f32s(exp));
  });

  it("Q6_K: two random super-blocks against the formula", () => {
    const r = rng(6);
    const b = new Uint8Array(2 * 210);
    const exp: number[] = [];
    const ds = [0.046875, -1];
    for (let k = 0; k < 2; k++) {
      const o = 210 * k;
      putU16(b, o + 208, k === 0 ? H.d3_64 : H.negOne);
      const sc = Array.from({ length: 16 }, () => r(256) - 128);
      for (let i = 0; i < 16; i++) b[o + 192 + i] = sc[i] & 0xff;
      for (let w = 0; w < 256; w++) {
        const q = r(64);
        const h = w >> 7; // which 128-weight half
        const quarter = (w & 127) >> 5; // 0..3 within the half
        const l = w & 31;
        const qlByte = o + h * 64 + l + (quarter & 1) * 32;
        b[qlByte] |= quarter < 2 ? q & 15 : (q & 15) << 4;
        b[o + 128 + h * 32 + l] |= (q >> 4) << (2 * quarter);
        const scale = sc[h * 8 + (l >> 4) + 2 * quarter];
        exp.push(ds[k] * scale * (q - 32));
      }
    }
    assert.deepEqual(dequantize(GgmlType.Q6_K, b, 512), f32s(exp));
  });

  it("Q6_K: a hand-worked super-block", () => {
    const b = new Uint8Array(210);
    putU16(b, 208, H.half);
    // Every other q is 0, so w = d·scale·(−32).
    for (let i = 0; i < 16; i++) b[192 + i] = i + 1; // scales 1..16
    b[0] = 0xff; // weight 0 low bits 15 (low nibble), weight 64 low bits 15 (high nibble)
    b[128] = 0b0011_0011; // weight 0 high bits 3 (q=63), weight 64 high bits 3 (q=63)
    const exp: number[] = [];
    for (let w = 0; w < 256; w++) exp.push(0.5 * (((w >> 4) & 1) + 2 * ((w >> 5) & 3) + 8 * (w >> 7) + 1) * -32);
    exp[0] = 0.5 * 1 * 31; // scale index 0, q − 32 = 31
    exp[64] = 0.5 * 5 * 31; // scale index 4
    assert.deepEqual(dequantize(GgmlType.Q6_K, b, 256), f32s(exp));
  });
});

describe("dequantize IQ4 types", () => {
  // ggml's kvalues_iq4nl, the 16 levels a nibble indexes.
  const LEVELS = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

  it("IQ4_NL: nibbles index the non-linear levels, w = d·level", () => {
    const b = new Uint8Array(18 * 2);
    putU16(b, 0, H.half);
    b[2] = 0xf0; // weight 0: level 0 (−127); weight 16: level 15 (113)
    b[2 + 7] = 0x98; // weight 7: level 8 (1); weight 23: level 9 (13)
    putU16(b, 18, H.negOne);
    for (let j = 0; j < 16; j++) b[20 + j] = j | ((15 - j) << 4);
    const exp = new Array(64).fill(0.5 * -127);
    exp[16] = 0.5 * 113;
    exp[7] = 0.5 * 1;
    exp[23] = 0.5 * 13;
    for (let j = 0; j < 16; j++) {
      exp[32 + j] = -LEVELS[j];
      exp[48 + j] = -LEVELS[15 - j];
    }
    assert.deepEqual(dequantize(GgmlType.IQ4_NL, b, 64), f32s(exp));
  });

  it("IQ4_XS: 6-bit group scales split over scales_l and scales_h", () => {
    const b = new Uint8Array(136);
    putU16(b, 0, H.half);
    // Group g's stored scale: low nibble g%2 of scales_l[g/2], top bits 2g of scales_h.
    // Every group 32 (scale 0) except group 0 = 35 (scale 3) and group 5 = 20 (scale −12).
    let sh = 0;
    const stored = [35, 32, 32, 32, 32, 20, 32, 32];
    stored.forEach((u, g) => {
      b[4 + (g >> 1)] |= (u & 15) << (4 * (g & 1));
      sh |= (u >> 4) << (2 * g);
    });
    putU16(b, 2, sh);
    for (let j = 0; j < 128; j++) b[8 + j] = 0x88; // level 8 (= 1) everywhere
    b[8 + 0] = 0x0f; // weight 0: level 15 (113); weight 16: level 0 (−127)
    b[8 + 5 * 16 + 2] = 0x3c; // group 5 weight 2 (= 162): level 12 (53); weight 178: level 3 (−65)
    const exp: number[] = [];
    for (let w = 0; w < 256; w++) exp.push(0.5 * (stored[w >> 5] - 32) * 1);
    exp[0] = 0.5 * 3 * 113;
    exp[16] = 0.5 * 3 * -127;
    exp[162] = 0.5 * -12 * 53;
    exp[178] = 0.5 * -12 * -65;
    assert.deepEqual(dequantize(GgmlType.IQ4_XS, b, 256), f32s(exp));
  });
});

describe("dequantize bad input", () => {
  const isGguf = (re: RegExp) => (e: unknown) => e instanceof GgufError && re.test(e.message);

  it("refuses unsupported types by name and unknown ones by number", () => {
    assert.throws(() => dequantize(GgmlType.Q8_K, new Uint8Array(292), 256), isGguf(/unsupported tensor type Q8_K/));
    assert.throws(() => dequantize(99 as GgmlType, new Uint8Array(4), 1), isGguf(/unsupported tensor type type 99/));
  });

  it("refuses too few bytes and partial blocks", () => {
    assert.throws(() => dequantize(GgmlType.Q4_K, new Uint8Array(143), 256), isGguf(/needs 144 bytes, got 143/));
    assert.throws(() => dequantize(GgmlType.Q8_0, new Uint8Array(34), 16), isGguf(/not a whole number of Q8_0 blocks/));
    assert.throws(() => dequantize(GgmlType.F32, new Uint8Array(7), 2), isGguf(/needs 8 bytes, got 7/));
  });
});
