/**
 * Deterministic tiny GGUF models (llama, qwen2, qwen3) for tests: random weights from a seeded
 * PRNG, a byte-level BPE vocabulary, a ChatML template with tools. Same options → same bytes.
 * The same generator writes random-weight models with the exact shapes of the catalog's real
 * models (buildShapeModel), streamed to disk tensor by tensor.
 */
import { SUPPORTED_ARCHS, type Arch } from "../arch/config.js";
import { quantizeQ4_K, quantizeQ8_0 } from "../gguf/quantize.js";
import { GgmlType, GgufValueType, type GgufMetaValue } from "../gguf/types.js";
import {
  encodeGguf,
  f16Bytes,
  f32Bytes,
  writeFileAtomic,
  writeGgufStream,
  type GgufStreamProgress,
  type GgufStreamSpec,
  type GgufTensorSpec,
  type GgufTensorStream,
  type GgufWriteSpec,
} from "../gguf/writer.js";
import { CHATML_TOOLS_TEMPLATE } from "./chatTemplate.js";
import { Prng } from "./prng.js";
import { findShape, llama3RopeFactors, SHAPE_IDS, type RealShape, type ShapeDimensions } from "./shapes.js";
import { buildTinyVocab, TOKEN_TYPE_NORMAL, type TinyVocab } from "./tokenizer.js";

/** The tiny models come in every architecture the trainer supports. */
export const TINY_ARCHS = SUPPORTED_ARCHS;
export type TinyArch = Arch;
export const TINY_TYPES = ["f32", "f16", "q8_0", "q4_k"] as const;
export type TinyType = (typeof TINY_TYPES)[number];

export interface TinyModelOptions {
  arch: TinyArch;
  type?: TinyType;
  seed?: number;
  layers?: number;
  /** Embedding width; default 64 (256 for q4_k, whose rows must be multiples of 256). */
  dim?: number;
  /** Declared context length (GGUF `<arch>.context_length`); default TINY_CONTEXT_LENGTH. */
  contextLength?: number;
}

/** Resolved shape of a tiny model: its dimensions, weight type and seed. */
export interface TinyDims extends ShapeDimensions {
  type: TinyType;
  seed: number;
}

export const TINY_CONTEXT_LENGTH = 32768;
export const TINY_LIMITS = { layers: { min: 1, max: 16 }, dim: { min: 32, max: 1024 }, seed: { min: 0, max: 0xffffffff } };
const HEADS = 4;
const KV_HEADS = 2;

/** A bad option; the message is one line naming the option and the problem. */
export class TinyModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TinyModelError";
  }
}

/** Block size each row length must be a multiple of, per weight type. */
function rowMultiple(type: TinyType): number {
  return type === "q4_k" ? 256 : type === "q8_0" ? 32 : HEADS * 2;
}

/** Validates options and fills in defaults; throws TinyModelError with a one-line message. */
export function resolveTinyDims(opts: TinyModelOptions): TinyDims {
  if (!(TINY_ARCHS as readonly string[]).includes(opts.arch)) {
    throw new TinyModelError(`arch must be one of ${TINY_ARCHS.join(", ")}, got '${String(opts.arch)}'`);
  }
  const type = opts.type ?? "f32";
  if (!(TINY_TYPES as readonly string[]).includes(type)) throw new TinyModelError(`type must be one of ${TINY_TYPES.join(", ")}, got '${String(type)}'`);
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed) || seed < TINY_LIMITS.seed.min || seed > TINY_LIMITS.seed.max) {
    throw new TinyModelError(`seed must be an integer between 0 and ${TINY_LIMITS.seed.max}, got ${seed}`);
  }
  const layers = opts.layers ?? 2;
  if (!Number.isInteger(layers) || layers < TINY_LIMITS.layers.min || layers > TINY_LIMITS.layers.max) {
    throw new TinyModelError(`layers must be an integer between ${TINY_LIMITS.layers.min} and ${TINY_LIMITS.layers.max}, got ${layers}`);
  }
  const dim = opts.dim ?? (type === "q4_k" ? 256 : 64);
  if (!Number.isInteger(dim) || dim < TINY_LIMITS.dim.min || dim > TINY_LIMITS.dim.max) {
    throw new TinyModelError(`dim must be an integer between ${TINY_LIMITS.dim.min} and ${TINY_LIMITS.dim.max}, got ${dim}`);
  }
  const multiple = rowMultiple(type);
  if (dim % multiple !== 0) {
    const why = type === "f32" || type === "f16" ? `${HEADS} heads of even size` : `${type} rows of whole blocks`;
    throw new TinyModelError(`dim must be a multiple of ${multiple} for ${why}, got ${dim}`);
  }
  const headDim = dim / HEADS;
  const contextLength = opts.contextLength ?? TINY_CONTEXT_LENGTH;
  if (!Number.isInteger(contextLength) || contextLength < 64 || contextLength > 1 << 20) {
    throw new TinyModelError(`contextLength must be an integer between 64 and ${1 << 20}, got ${contextLength}`);
  }
  return {
    arch: opts.arch,
    type,
    seed,
    layers,
    dim,
    heads: HEADS,
    kvHeads: KV_HEADS,
    headDim,
    ffn: 2 * dim,
    vocab: VOCAB().tokens.length,
    contextLength,
  };
}

let vocabCache: TinyVocab | null = null;
/** The vocabulary is the same for every tiny model; learn the merges once per process. */
function VOCAB(): TinyVocab {
  vocabCache ??= buildTinyVocab();
  return vocabCache;
}

/** llama.cpp `enum llama_ftype` for the file's dominant type. */
const FILE_TYPE: Record<TinyType, number> = { f32: 0, f16: 1, q8_0: 7, q4_k: 14 /* Q4_K_S: every matrix Q4_K */ };

/** Values generated (and encoded) at a time: bounds memory for multi-GB tensors. */
const CHUNK_VALUES = 1 << 20;

/** `search`: fit Q4_K scales by search (tiny models) or take each sub-block's range (bulk, ~15x faster). */
function encodeValues(values: Float32Array, type: TinyType, search: boolean): Uint8Array {
  switch (type) {
    case "f32":
      return f32Bytes(values);
    case "f16":
      return f16Bytes(values);
    case "q8_0":
      return quantizeQ8_0(values);
    case "q4_k":
      return quantizeQ4_K(values, { search });
  }
}

const GGML: Record<TinyType, GgmlType> = { f32: GgmlType.F32, f16: GgmlType.F16, q8_0: GgmlType.Q8_0, q4_k: GgmlType.Q4_K };

/** Everything that decides a generated model's bytes, tiny or with a real model's shape. */
interface ModelPlan extends Omit<ShapeDimensions, "vocab"> {
  name: string;
  /** Weight matrix type. */
  type: TinyType;
  seed: number;
  rmsEps: number;
  ropeBase: number;
  /** Write attention.key_length / value_length (needed when headDim is not dim / heads). */
  headDimKeys: boolean;
  qkvBias: boolean;
  qkNorm: boolean;
  vocab: TinyVocab;
  /**
   * Tied: token_embd.weight is a weight matrix (in `type`, std 2/sqrt(dim) so that logits have
   * std ≈ 2) and is also the output projection, as in the real small models. Untied (the tiny
   * models): token_embd stays F32 (std 0.5) and output.weight is its own matrix.
   */
  tied: boolean;
  ropeFreqs?: Float32Array;
  /** Q4_K scales by search (the tiny models) or from each sub-block's range (shapes: billions of random weights). */
  q4kSearch: boolean;
}

/** Random values with std `std` (and mean `mean`) from the tensor's own PRNG stream, `rowLen` at a time, encoded. */
function* randomChunks(
  seed: number,
  name: string,
  rowLen: number,
  rows: number,
  std: number,
  mean: number,
  type: TinyType,
  q4kSearch = true,
): Generator<Uint8Array> {
  const rng = Prng.forName(seed, name);
  const rowsPer = Math.max(1, Math.floor(CHUNK_VALUES / rowLen));
  const buf = new Float32Array(Math.min(rows, rowsPer) * rowLen);
  for (let r = 0; r < rows; r += rowsPer) {
    const n = Math.min(rowsPer, rows - r) * rowLen;
    const values = n === buf.length ? buf : buf.subarray(0, n);
    rng.fillNormal(values, std, mean);
    yield encodeValues(values, type, q4kSearch);
  }
}

function planMetadata(p: ModelPlan): Array<[string, GgufMetaValue]> {
  const a = p.arch;
  const u32 = (value: number): GgufMetaValue => ({ type: GgufValueType.UINT32, value });
  const f32 = (value: number): GgufMetaValue => ({ type: GgufValueType.FLOAT32, value });
  const str = (value: string): GgufMetaValue => ({ type: GgufValueType.STRING, value });
  const metadata: Array<[string, GgufMetaValue]> = [
    ["general.architecture", str(a)],
    ["general.name", str(p.name)],
    ["general.file_type", u32(FILE_TYPE[p.type])],
    ["general.quantization_version", u32(2)],
    [`${a}.vocab_size`, u32(p.vocab.tokens.length)],
    [`${a}.context_length`, u32(p.contextLength)],
    [`${a}.embedding_length`, u32(p.dim)],
    [`${a}.block_count`, u32(p.layers)],
    [`${a}.feed_forward_length`, u32(p.ffn)],
    [`${a}.attention.head_count`, u32(p.heads)],
    [`${a}.attention.head_count_kv`, u32(p.kvHeads)],
    [`${a}.attention.layer_norm_rms_epsilon`, f32(p.rmsEps)],
    [`${a}.rope.freq_base`, f32(p.ropeBase)],
    [`${a}.rope.dimension_count`, u32(p.headDim)],
  ];
  if (p.headDimKeys) {
    metadata.push([`${a}.attention.key_length`, u32(p.headDim)], [`${a}.attention.value_length`, u32(p.headDim)]);
  }
  const vocab = p.vocab;
  metadata.push(
    ["tokenizer.ggml.model", str("gpt2")],
    ["tokenizer.ggml.pre", str("qwen2")],
    ["tokenizer.ggml.tokens", { type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: vocab.tokens }],
    ["tokenizer.ggml.token_type", { type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, value: vocab.tokenTypes }],
    ["tokenizer.ggml.merges", { type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: vocab.merges }],
    ["tokenizer.ggml.bos_token_id", u32(vocab.endOfText)],
    ["tokenizer.ggml.eos_token_id", u32(vocab.imEnd)],
    ["tokenizer.ggml.eot_token_id", u32(vocab.imEnd)],
    ["tokenizer.ggml.padding_token_id", u32(vocab.endOfText)],
    ["tokenizer.ggml.add_bos_token", { type: GgufValueType.BOOL, value: false }],
    ["tokenizer.chat_template", str(CHATML_TOOLS_TEMPLATE)],
  );
  return metadata;
}

/** Tensor streams of a planned model, and the matrices written in q8_0 because q4_k cannot hold their rows. */
function planTensors(p: ModelPlan): { tensors: GgufTensorStream[]; fallbacks: string[] } {
  const tensors: GgufTensorStream[] = [];
  const fallbacks: string[] = [];
  const vocabSize = p.vocab.tokens.length;
  const vector = (name: string, n: number, std: number, mean = 0) =>
    tensors.push({ name, dims: [n], type: GgmlType.F32, chunks: () => randomChunks(p.seed, name, n, 1, std, mean, "f32") });
  // Weight matrices: dims [in, out] in ggml order; std 1/sqrt(in) keeps activations O(1).
  const matrix = (name: string, inDim: number, outDim: number, gain = 1) => {
    let type = p.type;
    // As llama.cpp's quantizer, a matrix whose rows are not whole Q4_K blocks takes another type.
    if (type === "q4_k" && inDim % 256 !== 0) {
      type = "q8_0";
      fallbacks.push(name);
    }
    tensors.push({
      name,
      dims: [inDim, outDim],
      type: GGML[type],
      chunks: () => randomChunks(p.seed, name, inDim, outDim, gain / Math.sqrt(inDim), 0, type, p.q4kSearch),
    });
  };
  const norm = (name: string, n: number) => vector(name, n, 0.05, 1);

  const qDim = p.heads * p.headDim;
  const kvDim = p.kvHeads * p.headDim;
  if (p.tied) {
    // Gain 2 → logits with std ≈ 2: peaked enough to be non-degenerate, not one-hot.
    matrix("token_embd.weight", p.dim, vocabSize, 2);
  } else {
    // Embeddings stay F32 (get_rows reads them; the trainer needs them exact).
    const name = "token_embd.weight";
    tensors.push({ name, dims: [p.dim, vocabSize], type: GgmlType.F32, chunks: () => randomChunks(p.seed, name, p.dim, vocabSize, 0.5, 0, "f32") });
  }
  const ropeFreqs = p.ropeFreqs;
  if (ropeFreqs) tensors.push({ name: "rope_freqs.weight", dims: [ropeFreqs.length], type: GgmlType.F32, chunks: () => [f32Bytes(ropeFreqs)] });
  for (let l = 0; l < p.layers; l++) {
    const b = `blk.${l}.`;
    norm(`${b}attn_norm.weight`, p.dim);
    matrix(`${b}attn_q.weight`, p.dim, qDim);
    matrix(`${b}attn_k.weight`, p.dim, kvDim);
    matrix(`${b}attn_v.weight`, p.dim, kvDim);
    if (p.qkvBias) {
      vector(`${b}attn_q.bias`, qDim, 0.1);
      vector(`${b}attn_k.bias`, kvDim, 0.1);
      vector(`${b}attn_v.bias`, kvDim, 0.1);
    }
    if (p.qkNorm) {
      norm(`${b}attn_q_norm.weight`, p.headDim);
      norm(`${b}attn_k_norm.weight`, p.headDim);
    }
    matrix(`${b}attn_output.weight`, qDim, p.dim);
    norm(`${b}ffn_norm.weight`, p.dim);
    matrix(`${b}ffn_gate.weight`, p.dim, p.ffn);
    matrix(`${b}ffn_up.weight`, p.dim, p.ffn);
    matrix(`${b}ffn_down.weight`, p.ffn, p.dim);
  }
  norm("output_norm.weight", p.dim);
  if (!p.tied) matrix("output.weight", p.dim, vocabSize, 2);
  return { tensors, fallbacks };
}

/** A stream spec held in memory: each tensor's chunks joined. */
function materialize(tensors: GgufTensorStream[]): GgufTensorSpec[] {
  return tensors.map(({ name, dims, type, chunks }) => ({ name, dims, type, data: Buffer.concat([...chunks()]) }));
}

function tinyPlan(opts: TinyModelOptions): ModelPlan {
  const d = resolveTinyDims(opts);
  const isQwen = d.arch !== "llama";
  return {
    ...d,
    name: `ClawRL tiny ${d.arch}`,
    rmsEps: isQwen ? 1e-6 : 1e-5,
    ropeBase: isQwen ? 1_000_000 : 10_000,
    headDimKeys: d.arch === "qwen3",
    qkvBias: d.arch === "qwen2",
    qkNorm: d.arch === "qwen3",
    vocab: VOCAB(),
    tied: false,
    q4kSearch: true,
  };
}

/** Builds the GGUF content (metadata + tensors) of a tiny model. */
export function buildTinyModel(opts: TinyModelOptions): GgufWriteSpec {
  const plan = tinyPlan(opts);
  return { metadata: planMetadata(plan), tensors: materialize(planTensors(plan).tensors) };
}

/** The complete file bytes of a tiny model. */
export function encodeTinyModel(opts: TinyModelOptions): Buffer {
  return encodeGguf(buildTinyModel(opts));
}

/** Writes a tiny model to `file` atomically; returns its resolved dims. */
export function writeTinyModel(file: string, opts: TinyModelOptions): TinyDims {
  const dims = resolveTinyDims(opts);
  writeFileAtomic(file, encodeGguf(buildTinyModel(opts), file));
  return dims;
}

// ---------------------------------------------------------------------------------------------
// Random-weight models with the shapes of real models (models/tiny/shapes.ts).

export const SHAPE_TYPES = ["f16", "q8_0", "q4_k"] as const;
export type ShapeType = (typeof SHAPE_TYPES)[number];

export interface ShapeModelOptions {
  /** A shape id (models/tiny/shapes.ts) or the id of the catalog model it is the shape of. */
  shape: string;
  /** Weight matrix type, token_embd included; default q8_0. */
  type?: ShapeType;
  seed?: number;
  /** Fewer blocks than the real model (1 to its count): the real width and vocabulary, less depth. */
  layers?: number;
  /** Declared context length; default the real model's. */
  contextLength?: number;
}

export interface ShapeDims extends TinyDims {
  type: ShapeType;
  shape: RealShape;
}

export const SHAPE_LIMITS = { context: { min: 64, max: 1 << 20 }, seed: TINY_LIMITS.seed };

/** Validates options against the shape; throws TinyModelError with a one-line message. */
export function resolveShapeDims(opts: ShapeModelOptions): ShapeDims {
  const shape = findShape(opts.shape);
  if (!shape) throw new TinyModelError(`shape must be one of ${SHAPE_IDS.join(", ")}, got '${String(opts.shape)}'`);
  const type = opts.type ?? "q8_0";
  if (!(SHAPE_TYPES as readonly string[]).includes(type)) throw new TinyModelError(`type must be one of ${SHAPE_TYPES.join(", ")}, got '${String(type)}'`);
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed) || seed < SHAPE_LIMITS.seed.min || seed > SHAPE_LIMITS.seed.max) {
    throw new TinyModelError(`seed must be an integer between 0 and ${SHAPE_LIMITS.seed.max}, got ${seed}`);
  }
  const layers = opts.layers ?? shape.layers;
  if (!Number.isInteger(layers) || layers < 1 || layers > shape.layers) {
    throw new TinyModelError(`layers must be an integer between 1 and ${shape.layers} (${shape.id} has ${shape.layers}), got ${layers}`);
  }
  const contextLength = opts.contextLength ?? shape.contextLength;
  if (!Number.isInteger(contextLength) || contextLength < SHAPE_LIMITS.context.min || contextLength > SHAPE_LIMITS.context.max) {
    throw new TinyModelError(`context must be an integer between ${SHAPE_LIMITS.context.min} and ${SHAPE_LIMITS.context.max}, got ${contextLength}`);
  }
  return {
    arch: shape.arch,
    type,
    seed,
    layers,
    dim: shape.dim,
    heads: shape.heads,
    kvHeads: shape.kvHeads,
    headDim: shape.headDim,
    ffn: shape.ffn,
    vocab: shape.vocab,
    contextLength,
    shape,
  };
}

const paddedVocabs = new Map<number, TinyVocab>();
/**
 * The tiny vocabulary (bytes, merges, ChatML specials: the same ids as in the tiny models)
 * padded to `size` tokens with `[PAD<id>]` tokens, as llama.cpp's converter names the ids a
 * tokenizer leaves unassigned. They are NORMAL tokens, not UNUSED: a random-weight model emits
 * them, and they then detokenize to their text instead of nothing; no merge produces them, so
 * tokenizing is unchanged; and they stay out of llama.cpp's special-token scan, which a
 * hundred thousand USER_DEFINED tokens would slow on every tokenize call.
 */
export function paddedVocab(size: number): TinyVocab {
  const cached = paddedVocabs.get(size);
  if (cached) return cached;
  const base = VOCAB();
  if (size < base.tokens.length) throw new TinyModelError(`vocabulary of ${size} is smaller than the tiny one (${base.tokens.length})`);
  const tokens = base.tokens.slice();
  const tokenTypes = base.tokenTypes.slice();
  for (let id = base.tokens.length; id < size; id++) {
    tokens.push(`[PAD${id}]`);
    tokenTypes.push(TOKEN_TYPE_NORMAL);
  }
  const vocab = { ...base, tokens, tokenTypes };
  paddedVocabs.set(size, vocab);
  return vocab;
}

export interface ShapeModel {
  dims: ShapeDims;
  spec: GgufStreamSpec;
  /** Matrices written in q8_0 because the type is q4_k and their rows are not multiples of 256. */
  fallbacks: string[];
}

/** The metadata and tensor streams of a random-weight model with a real model's shape. */
export function buildShapeModel(opts: ShapeModelOptions): ShapeModel {
  const d = resolveShapeDims(opts);
  const s = d.shape;
  const plan: ModelPlan = {
    ...d,
    name: `ClawRL random-weight ${s.name} shape`,
    rmsEps: s.rmsEps,
    ropeBase: s.ropeBase,
    headDimKeys: true,
    qkvBias: s.qkvBias,
    qkNorm: s.qkNorm,
    vocab: paddedVocab(s.vocab),
    tied: s.tiedOutput,
    ropeFreqs: s.ropeScaling ? llama3RopeFactors(s.headDim, s.ropeBase, s.ropeScaling) : undefined,
    q4kSearch: false,
  };
  const { tensors, fallbacks } = planTensors(plan);
  return { dims: d, spec: { metadata: planMetadata(plan), tensors }, fallbacks };
}

/**
 * Writes a random-weight model with a real model's shape to `file`, tensor by tensor (a 4B model
 * is never in memory): temp file, fsync, rename. Same options → same bytes.
 */
export function writeShapeModel(file: string, opts: ShapeModelOptions, onProgress?: (p: GgufStreamProgress) => void): ShapeModel & { bytes: number } {
  const model = buildShapeModel(opts);
  const bytes = writeGgufStream(file, model.spec, onProgress);
  return { ...model, bytes };
}

/** The complete file bytes of a shape model, in memory: small ones only (`layers: 1`, tests). */
export function encodeShapeModel(opts: ShapeModelOptions): Buffer {
  const { spec } = buildShapeModel(opts);
  return encodeGguf({ metadata: spec.metadata, tensors: materialize(spec.tensors), alignment: spec.alignment });
}

/** Fallback names grouped across blocks (blk.3.attn_q.weight → blk.*.attn_q.weight), in first-seen order. */
export function summarizeFallbacks(names: readonly string[]): string[] {
  return [...new Set(names.map((n) => n.replace(/^blk\.\d+\./, "blk.*.")))];
}
