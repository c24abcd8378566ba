/**
 * Dequantization throughput per type, as the trainer pays it at start.
 * Baseline (same run): copying the same number of f32 weights (a memory-bound floor), and for
 * Q8_0 a straightforward DataView decoder without the f16 table, to show what the table and
 * typed-array loops buy.
 *
 *   node --import tsx bench/dequant.ts [millions of weights, default 4]
 */
import { dequantize, f16ToF32 } from "../models/gguf/dequant.js";
import { GGML_TYPE_TRAITS, GgmlType } from "../models/gguf/types.js";

const n = Math.round((Number(process.argv[2] ?? 4) * 1e6) / 256) * 256;

function randomBytes(len: number): Uint8Array {
  const b = new Uint8Array(len);
  let s = 7;
  for (let i = 0; i < len; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    b[i] = s >>> 24;
  }
  return b;
}

/** Replaces every f16 scale with a finite one so the work is representative (no NaN paths). */
function tame(type: GgmlType, b: Uint8Array): Uint8Array {
  const t = GGML_TYPE_TRAITS[type]!;
  const fix = (o: number) => {
    b[o] = 0x66;
    b[o + 1] = 0x2e;
  };
  for (let o = 0; o < b.length; o += t.typeSize) {
    if (type === GgmlType.Q6_K) fix(o + 208);
    else if (type === GgmlType.Q3_K) fix(o + 108);
    else if (type === GgmlType.Q2_K) {
      fix(o + 80);
      fix(o + 82);
    } else if (type === GgmlType.F16 || type === GgmlType.BF16 || type === GgmlType.F32) break;
    else {
      fix(o);
      if (type === GgmlType.Q4_1 || type === GgmlType.Q5_1 || type === GgmlType.Q4_K || type === GgmlType.Q5_K) fix(o + 2);
    }
  }
  return b;
}

function naiveQ8_0(b: Uint8Array, nb: number): Float32Array {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out = new Float32Array(nb * 32);
  for (let i = 0; i < nb; i++) {
    const d = f16ToF32(dv.getUint16(i * 34, true));
    for (let j = 0; j < 32; j++) out[i * 32 + j] = d * dv.getInt8(i * 34 + 2 + j);
  }
  return out;
}

/**
 * Rounds: every candidate runs once per round, and each keeps its best time. Interleaving
 * keeps the comparison fair when the machine's load changes during the run.
 */
function bestTimes(cands: Array<[string, () => unknown]>, rounds = 9): Map<string, number> {
  const best = new Map<string, number>();
  for (const [, fn] of cands) fn(); // warm up the JIT
  for (let r = 0; r < rounds; r++) {
    for (const [name, fn] of cands) {
      const t0 = process.hrtime.bigint();
      fn();
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      best.set(name, Math.min(best.get(name) ?? Infinity, s));
    }
  }
  return best;
}

const src = new Float32Array(n).fill(0.5);
const types = [
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
];
const cands: Array<[string, () => unknown]> = [["f32 copy", () => new Float32Array(src)]];
for (const type of types) {
  const t = GGML_TYPE_TRAITS[type]!;
  const bytes = tame(type, randomBytes((n / t.blockSize) * t.typeSize));
  cands.push([t.name, () => dequantize(type, bytes, n)]);
  if (type === GgmlType.Q8_0) cands.push(["Q8_0 naive", () => naiveQ8_0(bytes, n / 32)]);
}
const best = bestTimes(cands);
const base = best.get("f32 copy")!;
console.log(`dequantize ${n.toLocaleString("en-US")} weights, best of 9 interleaved rounds (node ${process.version})`);
console.log("F32 is returned as a view of the bytes (no copy). Baseline: copying as many f32 weights.");
console.log("type         M weights/s   time vs f32 copy");
for (const [name, s] of best) console.log(`${name.padEnd(12)} ${(n / s / 1e6).toFixed(0).padStart(11)}   ${(s / base).toFixed(2)}x`);
console.log(`Q8_0 vs a naive DataView decoder: ${(best.get("Q8_0 naive")! / best.get("Q8_0")!).toFixed(2)}x faster`);
