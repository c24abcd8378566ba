/**
 * Deterministic tiny GGUF models (llama, qwen2, qwen3) for tests: random weights from a seeded
 * PRNG, a byte-level BPE vocabulary, a ChatML template with tools. Same options → same bytes.
 */
import { quantizeQ4_K, quantizeQ8_0 } from "../../trainer/gguf/quantize.js";
import { GgmlType, GgufValueType, type GgufMetaValue } from "../../trainer/gguf/types.js";
import { encodeGguf, f16Bytes, f32Bytes, writeFileAtomic, type GgufTensorSpec, type GgufWriteSpec } from "../../trainer/gguf/writer.js";
import { CHATML_TOOLS_TEMPLATE } from "./chatTemplate.js";
import { Prng } from "./prng.js";
import { buildTinyVocab, type TinyVocab } from "./tokenizer.js";

export const TINY_ARCHS = ["llama", "qwen2", "qwen3"] as const;
export type TinyArch = (typeof TINY_ARCHS)[number];
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

/** Resolved shape of a tiny model. */
export interface TinyDims {
  arch: TinyArch;
  type: TinyType;
  seed: number;
  layers: number;
  dim: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
  vocab: number;
  contextLength: number;
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
    arch: opts.arch, type, seed, layers, dim, heads: HEADS, kvHeads: KV_HEADS, headDim,
    ffn: 2 * dim, vocab: VOCAB().tokens.length, contextLength,
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

function encodeMatrix(values: Float32Array, type: TinyType): { type: GgmlType; data: Uint8Array } {
  switch (type) {
    case "f32": return { type: GgmlType.F32, data: f32Bytes(values) };
    case "f16": return { type: GgmlType.F16, data: f16Bytes(values) };
    case "q8_0": return { type: GgmlType.Q8_0, data: quantizeQ8_0(values) };
    case "q4_k": return { type: GgmlType.Q4_K, data: quantizeQ4_K(values) };
  }
}

/** Builds the GGUF content (metadata + tensors) of a tiny model. */
export function buildTinyModel(opts: TinyModelOptions): GgufWriteSpec {
  const d = resolveTinyDims(opts);
  const vocab = VOCAB();
  const a = d.arch;
  const u32 = (value: number): GgufMetaValue => ({ type: GgufValueType.UINT32, value });
  const f32 = (value: number): GgufMetaValue => ({ type: GgufValueType.FLOAT32, value });
  const str = (value: string): GgufMetaValue => ({ type: GgufValueType.STRING, value });
  const isQwen = a !== "llama";

  const metadata: Array<[string, GgufMetaValue]> = [
    ["general.architecture", str(a)],
    ["general.name", str(`ClawRL tiny ${a}`)],
    ["general.file_type", u32(FILE_TYPE[d.type])],
    ["general.quantization_version", u32(2)],
    [`${a}.vocab_size`, u32(d.vocab)],
    [`${a}.context_length`, u32(d.contextLength)],
    [`${a}.embedding_length`, u32(d.dim)],
    [`${a}.block_count`, u32(d.layers)],
    [`${a}.feed_forward_length`, u32(d.ffn)],
    [`${a}.attention.head_count`, u32(d.heads)],
    [`${a}.attention.head_count_kv`, u32(d.kvHeads)],
    [`${a}.attention.layer_norm_rms_epsilon`, f32(isQwen ? 1e-6 : 1e-5)],
    [`${a}.rope.freq_base`, f32(isQwen ? 1_000_000 : 10_000)],
    [`${a}.rope.dimension_count`, u32(d.headDim)],
  ];
  if (a === "qwen3") {
    metadata.push([`${a}.attention.key_length`, u32(d.headDim)], [`${a}.attention.value_length`, u32(d.headDim)]);
  }
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

  const tensors: GgufTensorSpec[] = [];
  // Random values with std `std` (and mean `mean`), from the tensor's own PRNG stream.
  const random = (name: string, n: number, std: number, mean = 0): Float32Array => {
    const rng = Prng.forName(d.seed, name);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = mean + std * rng.normal();
    return v;
  };
  const vector = (name: string, values: Float32Array) => tensors.push({ name, dims: [values.length], type: GgmlType.F32, data: f32Bytes(values) });
  // Weight matrices: dims [in, out] in ggml order; std 1/sqrt(in) keeps activations O(1).
  const matrix = (name: string, inDim: number, outDim: number, gain = 1) => {
    const values = random(name, inDim * outDim, gain / Math.sqrt(inDim));
    tensors.push({ name, dims: [inDim, outDim], ...encodeMatrix(values, d.type) });
  };
  const norm = (name: string, n: number) => vector(name, random(name, n, 0.05, 1));

  const qDim = d.heads * d.headDim;
  const kvDim = d.kvHeads * d.headDim;
  // Embeddings stay F32 (get_rows reads them; the trainer needs them exact).
  const embd = random("token_embd.weight", d.dim * d.vocab, 0.5);
  tensors.push({ name: "token_embd.weight", dims: [d.dim, d.vocab], type: GgmlType.F32, data: f32Bytes(embd) });
  for (let l = 0; l < d.layers; l++) {
    const p = `blk.${l}.`;
    norm(`${p}attn_norm.weight`, d.dim);
    matrix(`${p}attn_q.weight`, d.dim, qDim);
    matrix(`${p}attn_k.weight`, d.dim, kvDim);
    matrix(`${p}attn_v.weight`, d.dim, kvDim);
    if (a === "qwen2") {
      vector(`${p}attn_q.bias`, random(`${p}attn_q.bias`, qDim, 0.1));
      vector(`${p}attn_k.bias`, random(`${p}attn_k.bias`, kvDim, 0.1));
      vector(`${p}attn_v.bias`, random(`${p}attn_v.bias`, kvDim, 0.1));
    }
    if (a === "qwen3") {
      norm(`${p}attn_q_norm.weight`, d.headDim);
      norm(`${p}attn_k_norm.weight`, d.headDim);
    }
    matrix(`${p}attn_output.weight`, qDim, d.dim);
    norm(`${p}ffn_norm.weight`, d.dim);
    matrix(`${p}ffn_gate.weight`, d.dim, d.ffn);
    matrix(`${p}ffn_up.weight`, d.dim, d.ffn);
    matrix(`${p}ffn_down.weight`, d.ffn, d.dim);
  }
  norm("output_norm.weight", d.dim);
  // Gain 2 → logits with std ≈ 2: peaked enough to be non-degenerate, not one-hot.
  matrix("output.weight", d.dim, d.vocab, 2);
  return { metadata, tensors };
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
