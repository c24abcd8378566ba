/**
 * Quantizers for the ggml block formats the tiny models use: Q8_0 and Q4_K. Block layouts are
 * ggml's (ggml-common.h); the search for Q4_K scales is our own (grid + least-squares refit).
 * Input length must be a whole number of blocks; rows are independent, so a matrix quantizes
 * as one long row when its row length is a multiple of the block size.
 */
import { GgufError } from "./types.js";
import { f16BitsToF32, f32ToF16Bits } from "./writer.js";

export const QK8_0 = 32;
export const Q8_0_BLOCK_BYTES = 2 + QK8_0;
export const QK_K = 256;
export const Q4_K_BLOCK_BYTES = 2 + 2 + 12 + QK_K / 2;

/** C's roundf: halves away from zero (Math.round rounds -2.5 to -2). */
function roundAway(v: number): number {
  return v < 0 ? -Math.round(-v) : Math.round(v);
}

function checkLength(what: string, n: number, block: number): void {
  if (n % block !== 0) throw new GgufError(what, `${n} values is not a multiple of the block size ${block}`);
}

/**
 * Q8_0: per 32 values, an f16 scale d = max|x| / 127 and 32 int8 q = round(x / d);
 * dequantized as d * q.
 */
export function quantizeQ8_0(values: Float32Array): Uint8Array {
  checkLength("Q8_0", values.length, QK8_0);
  const nb = values.length / QK8_0;
  const out = new Uint8Array(nb * Q8_0_BLOCK_BYTES);
  const q8 = new Int8Array(out.buffer);
  for (let b = 0; b < nb; b++) {
    const x0 = b * QK8_0;
    let amax = 0;
    for (let i = 0; i < QK8_0; i++) {
      const a = Math.abs(values[x0 + i]);
      if (a > amax) amax = a;
    }
    const d = amax / 127;
    const id = d > 0 ? 1 / d : 0;
    const o = b * Q8_0_BLOCK_BYTES;
    const h = f32ToF16Bits(d);
    out[o] = h & 0xff;
    out[o + 1] = h >>> 8;
    for (let i = 0; i < QK8_0; i++) {
      const q = roundAway(values[x0 + i] * id);
      q8[o + 2 + i] = q > 127 ? 127 : q < -127 ? -127 : q;
    }
  }
  return out;
}

/** fitScaleMin's result, in module variables: it runs once per 32 values of multi-GB models. */
let fitScale = 0;
/** Positive offset: x ≈ fitScale * q - fitMin. */
let fitMin = 0;

/** A 4-bit level: round(v) clamped to 0..15 (as Math.max(0, Math.min(15, Math.round(v))) for finite v). */
function level(v: number): number {
  const r = Math.round(v);
  return r > 0 ? (r < 15 ? r : 15) : 0;
}

/** Weighted squared error of the 32 values at x[o..] quantized with `scale` and `offset`. */
function errorOf(x: Float32Array, o: number, w: Float32Array, scale: number, offset: number): number {
  let err = 0;
  for (let i = 0; i < 32; i++) {
    const l = scale > 0 ? level((x[o + i] - offset) / scale) : 0;
    const diff = scale * l + offset - x[o + i];
    err += w[i] * diff * diff;
  }
  return err;
}

/**
 * Best (scale, min) for the 32-value sub-block at x[o..] with 4-bit levels, minimising weighted
 * squared error: a small grid of scales around the range's, each refit by least squares on the
 * levels it gives (or, without `search`, the range's scale and min alone). min is kept >= 0
 * (the offset is never above 0), as Q4_K stores it unsigned. Sets fitScale and fitMin.
 */
function fitScaleMin(x: Float32Array, o: number, w: Float32Array, search: boolean): void {
  let lo = 0;
  let hi = -Infinity;
  for (let i = 0; i < 32; i++) {
    lo = Math.min(lo, x[o + i]);
    hi = Math.max(hi, x[o + i]);
  }
  if (hi <= lo) {
    fitScale = 0;
    fitMin = -lo;
    return;
  }
  if (!search) {
    // The range's own scale and min: the grid's starting point.
    fitScale = (hi - lo) / 15;
    fitMin = -lo;
    return;
  }
  let bestScale = (hi - lo) / 15;
  let bestMin = -lo;
  let bestErr = errorOf(x, o, w, bestScale, lo);
  for (let step = -4; step <= 8; step++) {
    const scale0 = (hi - lo) / (15 + 0.25 * step);
    // Weighted least squares for x ≈ scale * l + offset, on the levels scale0 gives.
    let sw = 0,
      sl = 0,
      sll = 0,
      sx = 0,
      slx = 0;
    for (let i = 0; i < 32; i++) {
      const xi = x[o + i];
      const wi = w[i];
      const l = level((xi - lo) / scale0);
      sw += wi;
      sl += wi * l;
      sll += wi * l * l;
      sx += wi * xi;
      slx += wi * l * xi;
    }
    const det = sw * sll - sl * sl;
    if (det <= 0) continue;
    let scale = (sw * slx - sl * sx) / det;
    let offset = (sll * sx - sl * slx) / det;
    if (offset > 0) {
      // Offset must stay <= 0: refit the scale alone with offset 0.
      offset = 0;
      scale = sll > 0 ? slx / sll : 0;
    }
    if (!(scale > 0)) continue;
    const err = errorOf(x, o, w, scale, offset);
    if (err < bestErr) {
      bestErr = err;
      bestScale = scale;
      bestMin = -offset;
    }
  }
  fitScale = bestScale;
  fitMin = bestMin;
}

/**
 * Q4_K: super-blocks of 256 = 8 sub-blocks of 32. Each sub-block has a 6-bit scale and a 6-bit
 * min, themselves scaled by the block's f16 d and dmin; values are 4-bit levels q with
 * x ≈ d * sc * q - dmin * m.
 */
export interface Q4KOptions {
  /**
   * Search each sub-block's scale and min (a grid of 13 scales, each refit by least squares;
   * default). false: take them from the sub-block's range: ~10% more error on Gaussian weights,
   * ~15x faster; for bulk random weights where only the format matters (real-shaped test models).
   */
  search?: boolean;
}

export function quantizeQ4_K(values: Float32Array, opts: Q4KOptions = {}): Uint8Array {
  const search = opts.search ?? true;
  checkLength("Q4_K", values.length, QK_K);
  const nb = values.length / QK_K;
  const out = new Uint8Array(nb * Q4_K_BLOCK_BYTES);
  const view = new DataView(out.buffer);
  const weights = new Float32Array(32);
  const L = new Uint8Array(QK_K);
  const scales = new Float64Array(8);
  const mins = new Float64Array(8);
  const ls = new Uint8Array(8);
  const lm = new Uint8Array(8);
  for (let b = 0; b < nb; b++) {
    const x = values.subarray(b * QK_K, (b + 1) * QK_K);
    // Importance weights: larger values matter more, with a floor from the block's RMS.
    let sumSq = 0;
    for (let i = 0; i < QK_K; i++) sumSq += x[i] * x[i];
    const rms = Math.sqrt(sumSq / QK_K);
    let maxScale = -Infinity;
    let maxMin = -Infinity;
    for (let j = 0; j < 8; j++) {
      if (search) for (let i = 0; i < 32; i++) weights[i] = rms + Math.abs(x[j * 32 + i]);
      fitScaleMin(x, j * 32, weights, search);
      scales[j] = fitScale;
      mins[j] = fitMin;
      // Math.max, not >: a -0 min must give way to +0 as Math.max(...all) would.
      maxScale = Math.max(maxScale, fitScale);
      maxMin = Math.max(maxMin, fitMin);
    }
    const dBits = f32ToF16Bits(maxScale / 63);
    const dminBits = f32ToF16Bits(maxMin / 63);
    const d = f16BitsToF32(dBits);
    const dmin = f16BitsToF32(dminBits);
    for (let j = 0; j < 8; j++) {
      ls[j] = d > 0 ? Math.min(63, Math.round(scales[j] / d)) : 0;
      lm[j] = dmin > 0 ? Math.min(63, Math.round(mins[j] / dmin)) : 0;
    }

    const o = b * Q4_K_BLOCK_BYTES;
    view.setUint16(o, dBits, true);
    view.setUint16(o + 2, dminBits, true);
    // 12 bytes of packed 6-bit scales/mins: sub-blocks 0-3 use the low 6 bits of bytes 0-7;
    // 4-7 put their low 4 bits in bytes 8-11 and their top 2 bits in the spare bits of 0-7.
    const sc = out.subarray(o + 4, o + 16);
    for (let j = 0; j < 8; j++) {
      if (j < 4) {
        sc[j] = ls[j];
        sc[j + 4] = lm[j];
      } else {
        sc[j + 4] = (ls[j] & 0xf) | ((lm[j] & 0xf) << 4);
        sc[j - 4] |= (ls[j] >> 4) << 6;
        sc[j] |= (lm[j] >> 4) << 6;
      }
    }
    // Levels from the scales actually stored, so rounding of d/sc is accounted for.
    for (let j = 0; j < 8; j++) {
      const scale = d * ls[j];
      const min = dmin * lm[j];
      for (let i = 0; i < 32; i++) {
        L[j * 32 + i] = scale > 0 ? level((x[j * 32 + i] + min) / scale) : 0;
      }
    }
    // qs: each 64-value chunk packs sub-block 2k in the low nibbles, 2k+1 in the high ones.
    const qs = out.subarray(o + 16, o + Q4_K_BLOCK_BYTES);
    for (let k = 0; k < 4; k++) {
      for (let l = 0; l < 32; l++) qs[k * 32 + l] = L[k * 64 + l] | (L[k * 64 + 32 + l] << 4);
    }
  }
  return out;
}
