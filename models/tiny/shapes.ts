/**
 * The real shapes of the catalog's models (models/catalog.json), for random-weight models of
 * the same size (`clawrl tiny-model --shape`): benchmarks of the trainer and the server at real
 * vocabulary sizes, depths and widths. Values are those of each model's Hugging Face
 * config.json (transcribed from memory of those files, not re-checked offline; the catalog test
 * checks the architecture and context length against the catalog).
 */

import type { Arch } from "../arch/config.js";

/**
 * A model's dimensions as its Hugging Face config.json names them: what the generator writes
 * into a GGUF (models/tiny/generate.ts, tiny models and real shapes alike). The trainer reads
 * them back from the GGUF as a ModelConfig (models/arch/config.ts); configOfShape
 * (models/trainability.ts) maps a real shape to one without a file.
 */
export interface ShapeDimensions {
  arch: Arch;
  layers: number;
  /** Embedding width (hidden_size). */
  dim: number;
  heads: number;
  kvHeads: number;
  /** Per-head width of q, k and v; not always dim / heads (Qwen3: 128). */
  headDim: number;
  /** intermediate_size. */
  ffn: number;
  vocab: number;
  contextLength: number;
}

/** llama3-style RoPE scaling (config.json `rope_scaling` with rope_type "llama3"). */
export interface Llama3RopeScaling {
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalContextLength: number;
}

/** A real model's shape: its dimensions and the rest of its architecture. */
export interface RealShape extends ShapeDimensions {
  /** Shape id, the `--shape` value: the catalog id without "-instruct" (base and instruct share a shape). */
  id: string;
  /** The catalog entry with this shape. */
  catalogId: string;
  /** The Hugging Face model it is the shape of. */
  name: string;
  /** Output projection tied to token_embd (no output.weight tensor). */
  tiedOutput: boolean;
  ropeBase: number;
  rmsEps: number;
  /** qwen2: biases on q, k and v. */
  qkvBias: boolean;
  /** qwen3: RMS norms on q and k per head. */
  qkNorm: boolean;
  ropeScaling?: Llama3RopeScaling;
}

const LLAMA32_ROPE_SCALING: Llama3RopeScaling = { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 };

type Common = Pick<RealShape, "arch" | "vocab" | "tiedOutput" | "ropeBase" | "rmsEps" | "contextLength" | "qkvBias" | "qkNorm">;
const SMOLLM2: Common = { arch: "llama", vocab: 49152, tiedOutput: true, ropeBase: 100_000, rmsEps: 1e-5, contextLength: 8192, qkvBias: false, qkNorm: false };
const QWEN25: Common = {
  arch: "qwen2",
  vocab: 151936,
  tiedOutput: true,
  ropeBase: 1_000_000,
  rmsEps: 1e-6,
  contextLength: 32768,
  qkvBias: true,
  qkNorm: false,
};
const QWEN3: Common = { arch: "qwen3", vocab: 151936, tiedOutput: true, ropeBase: 1_000_000, rmsEps: 1e-6, contextLength: 40960, qkvBias: false, qkNorm: true };
const LLAMA32: Common = {
  arch: "llama",
  vocab: 128256,
  tiedOutput: true,
  ropeBase: 500_000,
  rmsEps: 1e-5,
  contextLength: 131072,
  qkvBias: false,
  qkNorm: false,
};

export const MODEL_SHAPES: readonly RealShape[] = [
  {
    id: "smollm2-135m",
    catalogId: "smollm2-135m-instruct",
    name: "SmolLM2-135M",
    ...SMOLLM2,
    layers: 30,
    dim: 576,
    heads: 9,
    kvHeads: 3,
    headDim: 64,
    ffn: 1536,
  },
  {
    id: "smollm2-360m",
    catalogId: "smollm2-360m-instruct",
    name: "SmolLM2-360M",
    ...SMOLLM2,
    layers: 32,
    dim: 960,
    heads: 15,
    kvHeads: 5,
    headDim: 64,
    ffn: 2560,
  },
  {
    id: "qwen2.5-0.5b",
    catalogId: "qwen2.5-0.5b-instruct",
    name: "Qwen2.5-0.5B",
    ...QWEN25,
    layers: 24,
    dim: 896,
    heads: 14,
    kvHeads: 2,
    headDim: 64,
    ffn: 4864,
  },
  {
    id: "qwen2.5-1.5b",
    catalogId: "qwen2.5-1.5b-instruct",
    name: "Qwen2.5-1.5B",
    ...QWEN25,
    layers: 28,
    dim: 1536,
    heads: 12,
    kvHeads: 2,
    headDim: 128,
    ffn: 8960,
  },
  { id: "qwen3-0.6b", catalogId: "qwen3-0.6b", name: "Qwen3-0.6B", ...QWEN3, layers: 28, dim: 1024, heads: 16, kvHeads: 8, headDim: 128, ffn: 3072 },
  { id: "qwen3-1.7b", catalogId: "qwen3-1.7b", name: "Qwen3-1.7B", ...QWEN3, layers: 28, dim: 2048, heads: 16, kvHeads: 8, headDim: 128, ffn: 6144 },
  { id: "qwen3-4b", catalogId: "qwen3-4b", name: "Qwen3-4B", ...QWEN3, layers: 36, dim: 2560, heads: 32, kvHeads: 8, headDim: 128, ffn: 9728 },
  {
    id: "llama-3.2-1b",
    catalogId: "llama-3.2-1b-instruct",
    name: "Llama-3.2-1B",
    ...LLAMA32,
    layers: 16,
    dim: 2048,
    heads: 32,
    kvHeads: 8,
    headDim: 64,
    ffn: 8192,
    ropeScaling: LLAMA32_ROPE_SCALING,
  },
  {
    id: "llama-3.2-3b",
    catalogId: "llama-3.2-3b-instruct",
    name: "Llama-3.2-3B",
    ...LLAMA32,
    layers: 28,
    dim: 3072,
    heads: 24,
    kvHeads: 8,
    headDim: 128,
    ffn: 8192,
    ropeScaling: LLAMA32_ROPE_SCALING,
  },
];

export const SHAPE_IDS: readonly string[] = MODEL_SHAPES.map((s) => s.id);

/** The shape with this id, or of the catalog model with this id. */
export function findShape(id: string): RealShape | undefined {
  return MODEL_SHAPES.find((s) => s.id === id || s.catalogId === id);
}

/**
 * Per-frequency RoPE factors for llama3 scaling, `rope_freqs.weight` (headDim / 2 values), as
 * llama.cpp's converter computes them (convert_hf_to_gguf.py, LlamaModel): frequencies whose
 * wavelength is below original / highFreqFactor keep factor 1, those above
 * original / lowFreqFactor get `factor`, the band between is interpolated. float32 at each step,
 * as the converter's torch arithmetic.
 */
export function llama3RopeFactors(headDim: number, ropeBase: number, s: Llama3RopeScaling): Float32Array {
  const f = Math.fround;
  const lowFreqWavelen = s.originalContextLength / s.lowFreqFactor;
  const highFreqWavelen = s.originalContextLength / s.highFreqFactor;
  const out = new Float32Array(headDim / 2);
  for (let i = 0; i < out.length; i++) {
    const freq = f(1 / f(f(ropeBase) ** f(f(2 * i) / headDim)));
    const wavelen = f((2 * Math.PI) / freq);
    if (wavelen < highFreqWavelen) out[i] = 1;
    else if (wavelen > lowFreqWavelen) out[i] = s.factor;
    else {
      const smooth = f(f(f(s.originalContextLength / wavelen) - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor));
      out[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return out;
}
