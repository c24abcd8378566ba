/**
 * Native matrix products for the frozen weights on the CPU backends (wasm, cpu).
 *
 * Why: on wasm, XNNPACK packs (transposes and copies) a product's right operand on every call
 * unless the same tensor comes back, and a streamed weight is a new tensor each pass; a 1 × 128
 * step of the 0.5B shape ran at 38% of the wasm matMul peak for it (issue 31). These products
 * read the weight where the trainer keeps it, f32 on the host in GGUF's [out, in] layout, with
 * no packing and at native SIMD width (AVX2+FMA where the CPU has it): x·Wᵀ for the forward
 * and the head's logits, dy·W for the backward and E_p[W].
 *
 * The addon is built at `npm install` by scripts/build-native.mjs (g++ or clang++, Node-API:
 * one build serves Node and Electron). Where it is missing or fails to load the trainer keeps
 * the wasm products; CLAWRL_NATIVE_GEMM=0 turns it off (benchmarks' baseline). The same addon
 * runs AdamW's host update (trainer/optim/adamw.ts), whose JavaScript loop was 7% of that step,
 * the FFN's SwiGLU forward and backward (trainer/model/swiglu.ts), 13 tfjs kernels a block,
 * RMSNorm (trainer/model/norm.ts), ~18 a norm, attention's causal softmax
 * (trainer/model/attention-softmax.ts), RoPE's rotation (trainer/model/rope.ts), ~20, and the
 * output head's softmax over each vocabulary slice (trainer/model/head.ts), 6.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/** A frozen weight [rows, cols] kept on the host, row-major (GGUF's [out, in]). */
export interface HostMatrix {
  readonly kind: "host";
  readonly data: Float32Array;
  readonly rows: number;
  readonly cols: number;
}

export function hostMatrix(data: Float32Array, rows: number, cols: number): HostMatrix {
  if (data.length !== rows * cols) throw new Error(`hostMatrix: ${data.length} floats for [${rows}, ${cols}]`);
  return { kind: "host", data, rows, cols };
}

export interface NativeGemm {
  /** c[m,n] = a[m,k]·bᵀ with b [n,k]; c += it with `accumulate` (where `accumulates`). */
  nt(a: Float32Array, b: Float32Array, c: Float32Array, m: number, n: number, k: number, accumulate?: boolean): void;
  /** c[m,n] = a[m,k]·b with b [k,n]; c += it with `accumulate`. */
  nn(a: Float32Array, b: Float32Array, c: Float32Array, m: number, n: number, k: number, accumulate?: boolean): void;
  /** c[m,n] = aᵀ·b with a [k,m], b [k,n]; c += it with `accumulate`. */
  tn(a: Float32Array, b: Float32Array, c: Float32Array, m: number, n: number, k: number, accumulate?: boolean): void;
  /**
   * true where the products take `accumulate`. An addon built before it ignores a 7th argument
   * and would overwrite c, so callers check this first.
   */
  readonly accumulates?: boolean;
  setThreads(n: number): void;
  /**
   * sum + Σ g[i]² in double, added in index order. Optional: an addon built before it existed
   * lacks it (and adamw); the optimizer then keeps its JavaScript loop.
   */
  sumSquares?(g: Float32Array, sum: number): number;
  /** One parameter's AdamW update, as trainer/optim/adamw.ts's host loop computes it, bit for bit. */
  adamw?(
    g: Float32Array,
    p: Float32Array,
    m: Float32Array,
    v: Float32Array,
    pOut: Float32Array,
    mOut: Float32Array,
    vOut: Float32Array,
    scale: number,
    beta1: number,
    beta2: number,
    decay: number,
    stepSize: number,
    sqrtBc2: number,
    eps: number,
  ): void;
  /**
   * out = silu(g)·u elementwise (SwiGLU, trainer/model/swiglu.ts). Optional: an addon built
   * before it lacks it (and swigluBackward); the model then keeps tfjs's kernels.
   */
  swiglu?(g: Float32Array, u: Float32Array, out: Float32Array): void;
  /** SwiGLU's gradients: with s = σ(g), du = dy·g·s and dg = dy·u·s·(1 + g·(1 − s)). */
  swigluBackward?(g: Float32Array, u: Float32Array, dy: Float32Array, dg: Float32Array, du: Float32Array): void;
  /**
   * Attention's probabilities from raw scores s [rows, T] (trainer/model/attention-softmax.ts):
   * row r is query position r mod T, p = softmax(scale·s) over columns ≤ r mod T, 0 past them.
   * Optional: an addon built before it lacks it (and causalSoftmaxBackward).
   */
  causalSoftmax?(s: Float32Array, p: Float32Array, T: number, scale: number): void;
  /** The raw scores' gradient: ds = scale·p·(dp − Σ dp·p) per row, 0 past the diagonal. */
  causalSoftmaxBackward?(p: Float32Array, dp: Float32Array, ds: Float32Array, T: number, scale: number): void;
  /**
   * The output head's softmax over a vocabulary slice (trainer/model/head.ts): per row of `cols`
   * logits z, p = softmax(z) and lse = log Σ exp(z). Optional: an addon built before it lacks it.
   */
  softmaxRows?(z: Float32Array, p: Float32Array, lse: Float32Array, cols: number): void;
  /**
   * y = x·w / sqrt(mean(x²) + eps) per row of `cols` (RMSNorm, trainer/model/norm.ts); w has
   * `cols` floats. Optional: an addon built before it lacks it (and rmsNormBackward); the model
   * then keeps tfjs's kernels.
   */
  rmsNorm?(x: Float32Array, w: Float32Array, y: Float32Array, cols: number, eps: number): void;
  /** RMSNorm's gradient for x (w is frozen): dx = r·(w·dy) − x·r³·Σ(w·dy·x)/cols, r = 1/sqrt(mean(x²) + eps). */
  rmsNormBackward?(x: Float32Array, w: Float32Array, dy: Float32Array, dx: Float32Array, cols: number, eps: number): void;
  /**
   * out = x [rows, heads, headDim] rotated by RoPE (trainer/model/rope.ts) with tables cos and
   * sin [tableRows, nRot/2] (row r uses table row r mod tableRows); by −θ where `inverse` (the
   * gradient). Optional: an addon built before it lacks it; the model then keeps tfjs's kernels.
   */
  rope?(
    x: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    out: Float32Array,
    rows: number,
    tableRows: number,
    heads: number,
    headDim: number,
    nRot: number,
    neox: boolean,
    inverse: boolean,
  ): void;
  /**
   * Attention's gather (trainer/model/attention-host.ts): for head hh < count and position t < L,
   * the `width` floats of `matrix` row row0 + t (rows `pitch` floats apart) at column col0 + hh·width
   * are `block` row hh·L + t; copied into the block, or from it where `back`. Optional: an addon
   * built before it lacks it (and the host attention is not used).
   */
  copyHeads?(
    matrix: Float32Array,
    block: Float32Array,
    pitch: number,
    row0: number,
    L: number,
    col0: number,
    width: number,
    count: number,
    back: boolean,
  ): void;
  /** The array's data address mod 64 (a cache line). Optional: an addon built before it lacks it. */
  misalignment?(a: Float32Array): number;
  /** "avx2" or "generic" (the compiler's baseline: SSE2, NEON). */
  readonly isa: string;
  readonly hardwareThreads: number;
}

export type GemmStatus = { loaded: true; gemm: NativeGemm; path: string } | { loaded: false; why: string };

const ADDON = path.join("trainer", "native", "build", "gemm.node");

/** Where the addon may be: beside the sources (tsx), or above a bundle in out/main. */
function candidates(): string[] {
  const env = process.env.CLAWRL_GEMM_ADDON;
  if (env) return [env];
  const out: string[] = [];
  let dir = import.meta.dirname;
  for (let i = 0; i < 5; i++) {
    out.push(path.join(dir, ADDON));
    dir = path.dirname(dir);
  }
  return out;
}

let status: GemmStatus | undefined;

/** Loads the addon once; `why` says what is missing when it is not there. */
export function nativeGemmStatus(): GemmStatus {
  if (status) return status;
  if (process.env.CLAWRL_NATIVE_GEMM === "0") return (status = { loaded: false, why: "CLAWRL_NATIVE_GEMM=0" });
  const found = candidates().find((p) => fs.existsSync(p));
  if (!found) return (status = { loaded: false, why: "not built (npm run build:native needs g++ or clang++)" });
  try {
    const gemm = createRequire(import.meta.url)(found) as Partial<NativeGemm>;
    if (typeof gemm.nt !== "function" || typeof gemm.nn !== "function" || typeof gemm.tn !== "function" || typeof gemm.setThreads !== "function") {
      return (status = { loaded: false, why: `${found} is not the native products addon` });
    }
    return (status = { loaded: true, gemm: gemm as NativeGemm, path: found });
  } catch (e) {
    return (status = { loaded: false, why: `${found} did not load: ${(e as Error).message}` });
  }
}

/** The addon, or null where it is not built, did not load or is turned off. */
export function nativeGemm(): NativeGemm | null {
  const s = nativeGemmStatus();
  return s.loaded ? s.gemm : null;
}

/**
 * `names` of `g`, bound to it, all or none (an addon built before a piece lacks it): bound once
 * per addon, as the model asks for them on every layer of every step.
 */
const boundParts = new WeakMap<NativeGemm, Map<string, object | null>>();
function partsOf<K extends keyof NativeGemm>(g: NativeGemm | null, names: readonly K[]): Required<Pick<NativeGemm, K>> | null {
  if (!g) return null;
  let cache = boundParts.get(g);
  if (!cache) boundParts.set(g, (cache = new Map<string, object | null>()));
  const key = names.join(",");
  if (!cache.has(key)) {
    const fns = names.map((n) => g[n]);
    const all = fns.every((f) => typeof f === "function");
    cache.set(key, all ? Object.fromEntries(names.map((n, i) => [n, (fns[i] as (...a: unknown[]) => unknown).bind(g)])) : null);
  }
  return cache.get(key) as Required<Pick<NativeGemm, K>> | null;
}

/** The addon's AdamW pieces: sum of squares and the update. */
export type NativeOptimizer = Required<Pick<NativeGemm, "sumSquares" | "adamw">>;
export function nativeOptimizerOf(g: NativeGemm | null): NativeOptimizer | null {
  return partsOf(g, ["sumSquares", "adamw"]);
}

/** The addon's SwiGLU forward and backward. */
export type NativeSwiglu = Required<Pick<NativeGemm, "swiglu" | "swigluBackward">>;
export function nativeSwigluOf(g: NativeGemm | null): NativeSwiglu | null {
  return partsOf(g, ["swiglu", "swigluBackward"]);
}

/** The addon's causal softmax forward and backward. */
export type NativeCausalSoftmax = Required<Pick<NativeGemm, "causalSoftmax" | "causalSoftmaxBackward">>;
export function nativeCausalSoftmaxOf(g: NativeGemm | null): NativeCausalSoftmax | null {
  return partsOf(g, ["causalSoftmax", "causalSoftmaxBackward"]);
}

/** What attention as one host op needs of the addon (trainer/model/attention-host.ts). */
export type NativeAttention = Required<Pick<NativeGemm, "nt" | "nn" | "tn" | "causalSoftmax" | "causalSoftmaxBackward" | "copyHeads">>;
export function nativeAttentionOf(g: NativeGemm | null): NativeAttention | null {
  return partsOf(g, ["nt", "nn", "tn", "causalSoftmax", "causalSoftmaxBackward", "copyHeads"]);
}

/** The addon's softmax over rows with their log-sum-exp. */
export type NativeSoftmaxRows = Required<Pick<NativeGemm, "softmaxRows">>;
export function nativeSoftmaxRowsOf(g: NativeGemm | null): NativeSoftmaxRows | null {
  return partsOf(g, ["softmaxRows"]);
}

/** The addon's RMSNorm forward and backward. */
export type NativeRmsNorm = Required<Pick<NativeGemm, "rmsNorm" | "rmsNormBackward">>;
export function nativeRmsNormOf(g: NativeGemm | null): NativeRmsNorm | null {
  return partsOf(g, ["rmsNorm", "rmsNormBackward"]);
}

/** The addon's RoPE rotation (its gradient is the same call by −θ). */
export type NativeRope = Required<Pick<NativeGemm, "rope">>;
export function nativeRopeOf(g: NativeGemm | null): NativeRope | null {
  return partsOf(g, ["rope"]);
}

/**
 * A zeroed Float32Array of `n` whose first float starts a 64-byte cache line, where the addon can
 * say where an array lies; else a plain one. For the frozen weights the native products read: nn
 * (dy·W) loads 16 floats of a weight row at a time, and on rows 16 bytes past a line (where a
 * plain array's large allocation lands) every other load spans two lines.
 */
export function alignedFloats(n: number): Float32Array {
  const g = nativeGemm();
  if (!g?.misalignment || n === 0) return new Float32Array(n);
  const buffer = new ArrayBuffer(n * 4 + 64);
  const off = (64 - g.misalignment(new Float32Array(buffer, 0, 1))) % 64;
  return new Float32Array(buffer, off, n);
}

/** The addon where it replaces the backend's own products (wasm, the js cpu), else null. */
export function nativeProductsFor(backend: string): NativeGemm | null {
  return backend === "wasm" || backend === "cpu" ? nativeGemm() : null;
}
