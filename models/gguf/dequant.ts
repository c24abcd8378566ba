/**
 * Dequantization of ggml tensor data to f32. Block layouts follow ggml's `block_*` structs
 * (ggml-common.h) and the reference `dequantize_row_*` in ggml-quants.c; the code here is our
 * own. Loops are written over plain typed arrays because the trainer dequantizes 100M+
 * weights at start.
 */
import { GGML_TYPE_TRAITS, GgmlType, GgufError } from "./types.js";

let f16Table: Float32Array | undefined;

/** All 65536 half-precision values as f32, indexed by their bit pattern (built once). */
export function f16ToF32Table(): Float32Array {
  if (f16Table) return f16Table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0)
      t[h] = sign * mant * 2 ** -24; // zero and subnormals
    else if (exp === 31) t[h] = mant === 0 ? sign * Infinity : NaN;
    else t[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  f16Table = t;
  return t;
}

/** One half-precision bit pattern as a number. */
export function f16ToF32(bits: number): number {
  return f16ToF32Table()[bits & 0xffff];
}

const SUPPORTED = new Set<GgmlType>([
  GgmlType.F32,
  GgmlType.F16,
  GgmlType.BF16,
  GgmlType.Q8_0,
  GgmlType.Q4_0,
  GgmlType.Q4_1,
  GgmlType.Q5_0,
  GgmlType.Q5_1,
  GgmlType.Q2_K,
  GgmlType.Q3_K,
  GgmlType.Q4_K,
  GgmlType.Q5_K,
  GgmlType.Q6_K,
  GgmlType.IQ4_NL,
  GgmlType.IQ4_XS,
]);

export function canDequantize(type: GgmlType): boolean {
  return SUPPORTED.has(type);
}

/** The type's name as ggml spells it, or "type N" for types we do not know. */
export function typeName(type: GgmlType | number): string {
  return GGML_TYPE_TRAITS[type as GgmlType]?.name ?? `type ${type}`;
}

/**
 * Decodes `nElements` weights of `type` from `bytes` (ggml layout, little-endian).
 * For F32 the result may be a view sharing memory with `bytes` (when it is 4-byte aligned).
 * `source` labels errors (e.g. the file name).
 */
export function dequantize(type: GgmlType, bytes: Uint8Array, nElements: number, source = "dequantize"): Float32Array {
  const traits = GGML_TYPE_TRAITS[type];
  if (!traits || !SUPPORTED.has(type)) throw new GgufError(source, `unsupported tensor type ${typeName(type)}`);
  if (!Number.isSafeInteger(nElements) || nElements < 0 || nElements % traits.blockSize !== 0) {
    throw new GgufError(source, `${nElements} elements is not a whole number of ${traits.name} blocks of ${traits.blockSize}`);
  }
  const need = (nElements / traits.blockSize) * traits.typeSize;
  if (bytes.length < need) {
    throw new GgufError(source, `${traits.name} data for ${nElements} elements needs ${need} bytes, got ${bytes.length}`);
  }
  const nb = nElements / traits.blockSize;
  switch (type) {
    case GgmlType.F32:
      return f32(bytes, nElements);
    case GgmlType.F16:
      return f16(bytes, nElements);
    case GgmlType.BF16:
      return bf16(bytes, nElements);
    case GgmlType.Q8_0:
      return q8_0(bytes, nb);
    case GgmlType.Q4_0:
      return q4_0(bytes, nb);
    case GgmlType.Q4_1:
      return q4_1(bytes, nb);
    case GgmlType.Q5_0:
      return q5_0(bytes, nb, false);
    case GgmlType.Q5_1:
      return q5_0(bytes, nb, true);
    case GgmlType.Q2_K:
      return q2_K(bytes, nb);
    case GgmlType.Q3_K:
      return q3_K(bytes, nb);
    case GgmlType.Q4_K:
      return q4_K(bytes, nb);
    case GgmlType.Q5_K:
      return q5_K(bytes, nb);
    case GgmlType.Q6_K:
      return q6_K(bytes, nb);
    case GgmlType.IQ4_NL:
      return iq4_nl(bytes, nb);
    case GgmlType.IQ4_XS:
      return iq4_xs(bytes, nb);
  }
  throw new GgufError(source, `unsupported tensor type ${typeName(type)}`);
}

function f32(b: Uint8Array, n: number): Float32Array {
  if (b.byteOffset % 4 === 0) return new Float32Array(b.buffer, b.byteOffset, n);
  const out = new Float32Array(n);
  new Uint8Array(out.buffer).set(b.subarray(0, n * 4));
  return out;
}

function f16(b: Uint8Array, n: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(n);
  if (b.byteOffset % 2 === 0) {
    const h = new Uint16Array(b.buffer, b.byteOffset, n);
    for (let i = 0; i < n; i++) out[i] = t[h[i]];
  } else {
    for (let i = 0; i < n; i++) out[i] = t[b[2 * i] | (b[2 * i + 1] << 8)];
  }
  return out;
}

function bf16(b: Uint8Array, n: number): Float32Array {
  // bf16 is the top half of an f32: shift the bits up and reinterpret.
  const bits = new Uint32Array(n);
  for (let i = 0; i < n; i++) bits[i] = (b[2 * i] << 16) | (b[2 * i + 1] << 24);
  return new Float32Array(bits.buffer);
}

/** block_q8_0: f16 d, int8 qs[32]; w = d·q. */
function q8_0(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 32);
  for (let i = 0; i < nb; i++) {
    const o = i * 34;
    const y = i * 32;
    const d = t[b[o] | (b[o + 1] << 8)];
    // Sign-extending a Uint8Array byte measured ~2x faster here than reading an Int8Array view.
    for (let j = 0; j < 32; j++) out[y + j] = d * ((b[o + 2 + j] << 24) >> 24);
  }
  return out;
}

/** block_q4_0: f16 d, qs[16]; weight j is the low nibble of qs[j], j+16 the high; w = d·(q−8). */
function q4_0(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 32);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 18, y += 32) {
    const d = t[b[o] | (b[o + 1] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j];
      out[y + j] = d * ((q & 0xf) - 8);
      out[y + j + 16] = d * ((q >> 4) - 8);
    }
  }
  return out;
}

/** block_q4_1: f16 d, f16 m, qs[16] (nibbles as Q4_0); w = d·q + m. */
function q4_1(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 32);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 20, y += 32) {
    const d = t[b[o] | (b[o + 1] << 8)];
    const m = t[b[o + 2] | (b[o + 3] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = b[o + 4 + j];
      out[y + j] = d * (q & 0xf) + m;
      out[y + j + 16] = d * (q >> 4) + m;
    }
  }
  return out;
}

/**
 * block_q5_0 (22 bytes): f16 d, u32 qh, qs[16]; block_q5_1 (24 bytes) adds an f16 m after d.
 * Nibbles as Q4_0; weight j's fifth bit is bit j of qh (weights 16-31: bits 16-31).
 * Q5_0: w = d·(q−16); Q5_1: w = d·q + m. llama.cpp falls back to these for Q4_K/Q5_K tensors
 * whose rows are not a multiple of 256 (e.g. Qwen2.5-0.5B's 896-wide matrices).
 */
function q5_0(b: Uint8Array, nb: number, withMin: boolean): Float32Array {
  const t = f16ToF32Table();
  const size = withMin ? 24 : 22;
  const out = new Float32Array(nb * 32);
  for (let i = 0; i < nb; i++) {
    const o = i * size;
    const y = i * 32;
    const d = t[b[o] | (b[o + 1] << 8)];
    const m = withMin ? t[b[o + 2] | (b[o + 3] << 8)] : 0;
    const h = withMin ? o + 4 : o + 2;
    const qh = (b[h] | (b[h + 1] << 8) | (b[h + 2] << 16) | (b[h + 3] << 24)) >>> 0;
    const q = h + 4;
    for (let j = 0; j < 16; j++) {
      const x0 = (b[q + j] & 0xf) | (((qh >>> j) & 1) << 4);
      const x1 = (b[q + j] >> 4) | (((qh >>> (j + 16)) & 1) << 4);
      if (withMin) {
        out[y + j] = d * x0 + m;
        out[y + j + 16] = d * x1 + m;
      } else {
        out[y + j] = d * (x0 - 16);
        out[y + j + 16] = d * (x1 - 16);
      }
    }
  }
  return out;
}

/**
 * The 8 six-bit (scale, min) pairs of a K-quant super-block, packed in 12 bytes at `o`:
 * sub-blocks 0-3 use the low 6 bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 take
 * their low 4 bits from bytes 8-11 and their top 2 bits from the spare top bits of bytes 0-7.
 */
function unpackScaleMin(b: Uint8Array, o: number, sc: Uint8Array, mn: Uint8Array): void {
  for (let j = 0; j < 4; j++) {
    sc[j] = b[o + j] & 63;
    mn[j] = b[o + j + 4] & 63;
  }
  for (let j = 4; j < 8; j++) {
    sc[j] = (b[o + j + 4] & 0xf) | ((b[o + j - 4] >> 6) << 4);
    mn[j] = (b[o + j + 4] >> 4) | ((b[o + j] >> 6) << 4);
  }
}

/**
 * block_q2_K (84 bytes): scales[16], qs[64], f16 d, f16 dmin. Sixteen 16-weight groups; byte
 * `scales[g]` holds the group's scale (low nibble) and min (high nibble). In each 128-weight
 * half, the 32 bytes of qs hold four 2-bit planes (shift 2k for the k-th 32 weights), bytes
 * 0-15 for the first 16 of those weights and 16-31 for the next. w = d·sc·q − dmin·m.
 */
function q2_K(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 256);
  for (let i = 0; i < nb; i++) {
    const o = i * 84;
    const d = t[b[o + 80] | (b[o + 81] << 8)];
    const dmin = t[b[o + 82] | (b[o + 83] << 8)];
    for (let h = 0; h < 2; h++) {
      const q = o + 16 + h * 32;
      for (let k = 0; k < 4; k++) {
        const shift = 2 * k;
        for (let half = 0; half < 2; half++) {
          const g = h * 8 + k * 2 + half;
          const sc = b[o + g];
          const dl = d * (sc & 0xf);
          const ml = dmin * (sc >> 4);
          const y = i * 256 + g * 16;
          const qq = q + half * 16;
          for (let l = 0; l < 16; l++) out[y + l] = dl * ((b[qq + l] >> shift) & 3) - ml;
        }
      }
    }
  }
  return out;
}

/**
 * block_q3_K (110 bytes): hmask[32], qs[64], scales[12], f16 d. Same 2-bit planes as Q2_K plus
 * a high bit from hmask (bit 4h+k of hmask[l], for weight l of the k-th 32 of half h); a set
 * bit means q, a clear one q − 4. Sixteen signed 6-bit group scales (stored +32): low 4 bits
 * in the nibbles of bytes 0-7 (groups 0-7 low nibbles, 8-15 high), top 2 bits in bytes 8-11
 * (group g: byte 8 + g%4, bits 2·⌊g/4⌋). w = d·(scale−32)·q.
 */
function q3_K(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 256);
  const scales = new Int32Array(16);
  for (let i = 0; i < nb; i++) {
    const o = i * 110;
    const s = o + 96;
    const d = t[b[o + 108] | (b[o + 109] << 8)];
    for (let g = 0; g < 16; g++) {
      const low = g < 8 ? b[s + g] & 0xf : b[s + g - 8] >> 4;
      const high = (b[s + 8 + (g & 3)] >> (2 * (g >> 2))) & 3;
      scales[g] = (low | (high << 4)) - 32;
    }
    for (let h = 0; h < 2; h++) {
      const q = o + 32 + h * 32;
      for (let k = 0; k < 4; k++) {
        const shift = 2 * k;
        const bit = 4 * h + k;
        for (let half = 0; half < 2; half++) {
          const g = h * 8 + k * 2 + half;
          const dl = d * scales[g];
          const y = i * 256 + g * 16;
          const l0 = half * 16;
          for (let l = 0; l < 16; l++) {
            const lo = (b[q + l0 + l] >> shift) & 3;
            // Branch-free: random high bits would mispredict a conditional half the time.
            out[y + l] = dl * (lo - 4 + (((b[o + l0 + l] >> bit) & 1) << 2));
          }
        }
      }
    }
  }
  return out;
}

/**
 * block_q4_K (144 bytes): f16 d, f16 dmin, scales[12], qs[128]. Eight 32-weight sub-blocks;
 * each 32-byte run of qs holds two sub-blocks (low nibbles, then high). w = d·sc·q − dmin·m.
 */
function q4_K(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 256);
  const sc = new Uint8Array(8);
  const mn = new Uint8Array(8);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 144) {
    const d = t[b[o] | (b[o + 1] << 8)];
    const dmin = t[b[o + 2] | (b[o + 3] << 8)];
    unpackScaleMin(b, o + 4, sc, mn);
    let q = o + 16;
    for (let s = 0; s < 8; s += 2, q += 32) {
      const d1 = d * sc[s],
        m1 = dmin * mn[s];
      const d2 = d * sc[s + 1],
        m2 = dmin * mn[s + 1];
      for (let l = 0; l < 32; l++) out[y + l] = d1 * (b[q + l] & 0xf) - m1;
      for (let l = 0; l < 32; l++) out[y + 32 + l] = d2 * (b[q + l] >> 4) - m2;
      y += 64;
    }
  }
  return out;
}

/**
 * block_q5_K (176 bytes): f16 d, f16 dmin, scales[12], qh[32], qs[128]. As Q4_K plus a fifth
 * bit per weight: sub-block s takes bit s of qh[l] for its weight l.
 */
function q5_K(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 256);
  const sc = new Uint8Array(8);
  const mn = new Uint8Array(8);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 176) {
    const d = t[b[o] | (b[o + 1] << 8)];
    const dmin = t[b[o + 2] | (b[o + 3] << 8)];
    unpackScaleMin(b, o + 4, sc, mn);
    const qh = o + 16;
    let q = o + 48;
    for (let s = 0; s < 8; s += 2, q += 32) {
      const d1 = d * sc[s],
        m1 = dmin * mn[s];
      const d2 = d * sc[s + 1],
        m2 = dmin * mn[s + 1];
      for (let l = 0; l < 32; l++) out[y + l] = d1 * ((b[q + l] & 0xf) | (((b[qh + l] >> s) & 1) << 4)) - m1;
      for (let l = 0; l < 32; l++) out[y + 32 + l] = d2 * ((b[q + l] >> 4) | (((b[qh + l] >> (s + 1)) & 1) << 4)) - m2;
      y += 64;
    }
  }
  return out;
}

/**
 * block_q6_K (210 bytes): ql[128], qh[64], int8 scales[16], f16 d. Each 128-weight half uses
 * 64 bytes of ql and 32 of qh; weight l+32k takes a nibble of ql and 2 bits (shift 2k) of qh;
 * one int8 scale per 16 weights. w = d·scale·(q − 32).
 */
function q6_K(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 256);
  for (let i = 0, o = 0; i < nb; i++, o += 210) {
    const d = t[b[o + 208] | (b[o + 209] << 8)];
    for (let h = 0; h < 2; h++) {
      const ql = o + h * 64;
      const qh = o + 128 + h * 32;
      const sc = o + 192 + h * 8;
      const y = i * 256 + h * 128;
      // Weights l < 16 use scales 0,2,4,6 of this half; l >= 16 use 1,3,5,7.
      for (let g = 0; g < 2; g++) {
        const s0 = d * ((b[sc + g] << 24) >> 24);
        const s1 = d * ((b[sc + g + 2] << 24) >> 24);
        const s2 = d * ((b[sc + g + 4] << 24) >> 24);
        const s3 = d * ((b[sc + g + 6] << 24) >> 24);
        for (let l = g * 16; l < g * 16 + 16; l++) {
          const a = b[ql + l],
            c = b[ql + l + 32],
            hb = b[qh + l];
          out[y + l] = s0 * (((a & 0xf) | ((hb & 3) << 4)) - 32);
          out[y + l + 32] = s1 * (((c & 0xf) | (((hb >> 2) & 3) << 4)) - 32);
          out[y + l + 64] = s2 * (((a >> 4) | (((hb >> 4) & 3) << 4)) - 32);
          out[y + l + 96] = s3 * (((c >> 4) | (((hb >> 6) & 3) << 4)) - 32);
        }
      }
    }
  }
  return out;
}

/** The 16 non-linear levels of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl). */
const IQ4_LEVELS = new Int8Array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]);

/** block_iq4_nl (18 bytes): f16 d, qs[16] (nibbles as Q4_0, each an index into the levels); w = d·level. */
function iq4_nl(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 32);
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const y = i * 32;
    const d = t[b[o] | (b[o + 1] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j];
      out[y + j] = d * IQ4_LEVELS[q & 0xf];
      out[y + j + 16] = d * IQ4_LEVELS[q >> 4];
    }
  }
  return out;
}

/**
 * block_iq4_xs (136 bytes): f16 d, u16 scales_h, scales_l[4], qs[128]. Eight 32-weight groups
 * with 6-bit scales (stored +32): low 4 bits in nibble g%2 of scales_l[g/2], top 2 bits at
 * bit 2g of scales_h. Each group's 16 qs bytes are laid out as IQ4_NL. w = d·(scale−32)·level.
 */
function iq4_xs(b: Uint8Array, nb: number): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(nb * 256);
  for (let i = 0; i < nb; i++) {
    const o = i * 136;
    const d = t[b[o] | (b[o + 1] << 8)];
    const sh = b[o + 2] | (b[o + 3] << 8);
    for (let g = 0; g < 8; g++) {
      const ls = ((b[o + 4 + (g >> 1)] >> (4 * (g & 1))) & 0xf) | (((sh >> (2 * g)) & 3) << 4);
      const dl = d * (ls - 32);
      const q = o + 8 + g * 16;
      const y = i * 256 + g * 32;
      for (let j = 0; j < 16; j++) {
        out[y + j] = dl * IQ4_LEVELS[b[q + j] & 0xf];
        out[y + j + 16] = dl * IQ4_LEVELS[b[q + j] >> 4];
      }
    }
  }
  return out;
}
