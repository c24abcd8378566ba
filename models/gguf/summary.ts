/**
 * A plain description of a GGUF file (model or LoRA adapter) from its header alone:
 * what `clawrl inspect` prints and what the app can show about a model.
 */
import { SUPPORTED_ARCHS } from "../arch/config.js";
import { typeName } from "./dequant.js";
import { archNumber, metaArch, metaArray, metaNumber, metaString, type GgufFile } from "./reader.js";

/** Architectures the trainer can run: one list, owned by the trainer's model config. */
export const TRAINABLE_ARCHS: readonly string[] = SUPPORTED_ARCHS;

/** llama.cpp's `enum llama_ftype` (general.file_type), the names it prints. */
const FILE_TYPES: Record<number, string> = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  7: "Q8_0",
  8: "Q5_0",
  9: "Q5_1",
  10: "Q2_K",
  11: "Q3_K_S",
  12: "Q3_K_M",
  13: "Q3_K_L",
  14: "Q4_K_S",
  15: "Q4_K_M",
  16: "Q5_K_S",
  17: "Q5_K_M",
  18: "Q6_K",
  32: "BF16",
};

export interface LoraSummary {
  /** Architecture of the base model it adapts. */
  architecture: string | null;
  alpha: number | null;
  /** From the first `.lora_a` tensor (ne = [in, rank]). */
  rank: number | null;
  tensorCount: number;
  /** Adapted weight matrices (lora_a/lora_b pairs). */
  adaptedMatrices: number;
}

export interface GgufSummary {
  path: string;
  fileSize: number;
  ggufVersion: number;
  architecture: string | null;
  name: string | null;
  kind: "model" | "lora-adapter" | "other";
  parameterCount: number;
  tensorCount: number;
  /** Tensor count per type name, most parameters first. */
  tensorTypes: Array<{ type: string; tensors: number; parameters: number }>;
  /** The type holding most weights of the matrices (2+ dims), e.g. "Q4_K". */
  mainType: string | null;
  /** general.file_type as llama.cpp names it (e.g. "Q4_K_M"), when present. */
  fileType: string | null;
  contextLength: number | null;
  embeddingLength: number | null;
  layers: number | null;
  heads: number | null;
  headsKv: number | null;
  /** Bytes of an f16 KV cache per token over all layers (kvCacheBytesPerToken); null when the header lacks the shape. */
  kvBytesPerToken: number | null;
  feedForwardLength: number | null;
  vocabSize: number | null;
  tokenizerModel: string | null;
  hasChatTemplate: boolean;
  lora: LoraSummary | null;
  trainerSupported: boolean;
}

/**
 * llama.cpp's f16 K and V cache per token over all layers, from the header: the one formula the
 * serving context policy and the serve-memory estimates use. Heads may be wider than
 * embedding/heads (Qwen3's `attention.key_length` is 128 at an embedding of 1024 with 16 heads).
 */
export function kvCacheBytesPerToken(file: GgufFile): number | null {
  const layers = archNumber(file, "block_count");
  const heads = archNumber(file, "attention.head_count");
  const embd = archNumber(file, "embedding_length");
  if (!layers || !heads || !embd) return null;
  const headsKv = archNumber(file, "attention.head_count_kv") || heads;
  const keyLen = archNumber(file, "attention.key_length") ?? embd / heads;
  const valueLen = archNumber(file, "attention.value_length") ?? embd / heads;
  return layers * headsKv * (keyLen + valueLen) * 2;
}

export function summarizeGguf(file: GgufFile): GgufSummary {
  const arch = metaArch(file) ?? null;
  const isLora = metaString(file, "general.type") === "adapter" && metaString(file, "adapter.type") === "lora";
  const byType = new Map<string, { type: string; tensors: number; parameters: number }>();
  const matrixWeights = new Map<string, number>();
  let parameterCount = 0;
  for (const t of file.tensors) {
    const name = typeName(t.type);
    const e = byType.get(name) ?? { type: name, tensors: 0, parameters: 0 };
    e.tensors++;
    e.parameters += t.nElements;
    byType.set(name, e);
    parameterCount += t.nElements;
    if (t.dims.filter((d) => d > 1).length >= 2) matrixWeights.set(name, (matrixWeights.get(name) ?? 0) + t.nElements);
  }
  const tensorTypes = [...byType.values()].sort((a, b) => b.parameters - a.parameters);
  const mainType = [...matrixWeights.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? tensorTypes[0]?.type ?? null;
  const ft = metaNumber(file, "general.file_type");

  let lora: LoraSummary | null = null;
  if (isLora) {
    const loraA = file.tensors.filter((t) => t.name.endsWith(".lora_a"));
    lora = {
      architecture: arch,
      alpha: metaNumber(file, "adapter.lora.alpha") ?? null,
      rank: loraA[0]?.dims[1] ?? null,
      tensorCount: file.tensors.length,
      adaptedMatrices: loraA.length,
    };
  }
  const tokens = metaArray(file, "tokenizer.ggml.tokens");
  return {
    path: file.path,
    fileSize: file.fileSize,
    ggufVersion: file.version,
    architecture: arch,
    name: metaString(file, "general.name") ?? null,
    kind: isLora ? "lora-adapter" : metaString(file, "general.type") === undefined || metaString(file, "general.type") === "model" ? "model" : "other",
    parameterCount,
    tensorCount: file.tensors.length,
    tensorTypes,
    mainType,
    fileType: ft === undefined ? null : (FILE_TYPES[ft] ?? `file type ${ft}`),
    contextLength: archNumber(file, "context_length") ?? null,
    embeddingLength: archNumber(file, "embedding_length") ?? null,
    layers: archNumber(file, "block_count") ?? null,
    heads: archNumber(file, "attention.head_count") ?? null,
    headsKv: archNumber(file, "attention.head_count_kv") ?? null,
    kvBytesPerToken: kvCacheBytesPerToken(file),
    feedForwardLength: archNumber(file, "feed_forward_length") ?? null,
    vocabSize: tokens?.length ?? archNumber(file, "vocab_size") ?? null,
    tokenizerModel: metaString(file, "tokenizer.ggml.model") ?? null,
    hasChatTemplate: metaString(file, "tokenizer.chat_template") !== undefined,
    lora,
    trainerSupported: arch !== null && TRAINABLE_ARCHS.includes(arch),
  };
}
