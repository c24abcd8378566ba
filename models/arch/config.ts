/**
 * Model hyper-parameters read from GGUF metadata, for the architectures the trainer can run.
 * Keys follow llama.cpp (`<arch>.block_count`, `<arch>.attention.head_count`, ...).
 */
import { findTensor, metaArch, metaNumber, metaString, type GgufFile } from "../gguf/reader.js";
import { GgufError, GgufValueType } from "../gguf/types.js";

export const SUPPORTED_ARCHS = ["llama", "qwen2", "qwen3"] as const;
export type Arch = (typeof SUPPORTED_ARCHS)[number];

export interface ModelConfig {
  arch: Arch;
  nLayer: number;
  /** Hidden size (embedding length). */
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  /** Per-head size of Q and K (`attention.key_length`, else nEmbd / nHead). */
  headDim: number;
  /** Per-head size of V (`attention.value_length`, else headDim). */
  headDimV: number;
  nFf: number;
  nVocab: number;
  /** RoPE: rotated dimensions per head, frequency base, position scale (1 / linear factor). */
  ropeDim: number;
  ropeBase: number;
  ropeFreqScale: number;
  /** "normal" = adjacent pairs (llama), "neox" = halves (qwen2, qwen3); as llama.cpp picks. */
  ropeMode: "normal" | "neox";
  rmsEps: number;
  contextLength: number;
  /** No `output.weight`: the token embedding is the output projection. */
  tiedOutput: boolean;
  /** qwen2: Q, K, V carry biases. */
  qkvBias: boolean;
  /** qwen3: per-head RMSNorm of Q and K before RoPE. */
  qkNorm: boolean;
}

function isArch(a: string): a is Arch {
  return (SUPPORTED_ARCHS as readonly string[]).includes(a);
}

/** Reads and validates the config; a clear GgufError for anything the forward pass cannot run. */
export function readModelConfig(file: GgufFile): ModelConfig {
  const fail = (problem: string): never => {
    throw new GgufError(file.path, problem);
  };
  const type = metaString(file, "general.type");
  if (type !== undefined && type !== "model") fail(`general.type is '${type}', not a base model`);
  const archName = metaArch(file) ?? fail("no general.architecture");
  if (!isArch(archName)) fail(`architecture '${archName}' is not supported by the trainer (supported: ${SUPPORTED_ARCHS.join(", ")})`);
  const arch = archName as Arch;

  const need = (suffix: string): number => {
    const key = `${arch}.${suffix}`;
    const v = file.metadata.get(key);
    if (v?.type === GgufValueType.ARRAY) fail(`${key} varies per layer, which the trainer does not support`);
    const n = metaNumber(file, key);
    if (n === undefined) fail(`missing metadata ${key}`);
    return n as number;
  };
  const opt = (suffix: string): number | undefined => metaNumber(file, `${arch}.${suffix}`);

  const nEmbd = need("embedding_length");
  const nHead = need("attention.head_count");
  const nHeadKv = opt("attention.head_count_kv") ?? nHead;
  if (nHead % nHeadKv !== 0) fail(`head_count ${nHead} is not a multiple of head_count_kv ${nHeadKv}`);
  const headDim = opt("attention.key_length") ?? nEmbd / nHead;
  if (!Number.isInteger(headDim)) fail(`embedding_length ${nEmbd} is not divisible by head_count ${nHead}`);
  const ropeDim = opt("rope.dimension_count") ?? headDim;
  if (ropeDim % 2 !== 0 || ropeDim > headDim) fail(`rope.dimension_count ${ropeDim} must be even and at most the head size ${headDim}`);

  let ropeFreqScale = 1;
  const scaling = metaString(file, `${arch}.rope.scaling.type`);
  if (scaling === "linear") {
    const factor = opt("rope.scaling.factor") ?? 1;
    ropeFreqScale = factor > 0 ? 1 / factor : 1;
  } else if (scaling !== undefined && scaling !== "none") {
    fail(`rope scaling '${scaling}' is not supported by the trainer (only none or linear)`);
  }

  const embd = findTensor(file, "token_embd.weight") ?? fail("no token_embd.weight tensor");
  if (embd.dims.length !== 2 || embd.dims[0] !== nEmbd) fail(`token_embd.weight has shape [${embd.dims.join(", ")}], expected [${nEmbd}, n_vocab]`);

  return {
    arch,
    nLayer: need("block_count"),
    nEmbd,
    nHead,
    nHeadKv,
    headDim,
    headDimV: opt("attention.value_length") ?? headDim,
    nFf: need("feed_forward_length"),
    nVocab: embd.dims[1],
    ropeDim,
    ropeBase: opt("rope.freq_base") ?? 10000,
    ropeFreqScale,
    ropeMode: arch === "llama" ? "normal" : "neox",
    rmsEps: opt("attention.layer_norm_rms_epsilon") ?? 1e-5,
    contextLength: opt("context_length") ?? 2048,
    tiedOutput: findTensor(file, "output.weight") === undefined,
    qkvBias: arch === "qwen2",
    qkNorm: arch === "qwen3",
  };
}
