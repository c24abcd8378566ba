/**
 * The frozen base model's weights and where they live while the trainer runs.
 *
 * Every linear weight stays in GGUF's own layout [out, in] (ggml ne = [in, out]): no transposed
 * copy is ever made (y = x·Wᵀ is computed by frozenLinear in fast-matmul.ts).
 *
 * Placement (chosen by the memory plan, plan/memoryPlan.ts):
 * - "device": dequantized once to f32 tensors on the tfjs backend (fastest; needs 4 bytes per
 *   weight of backend memory, and on wasm twice that: XNNPACK keeps a packed copy of every
 *   resident matrix used as a product's right operand).
 * - "host-f32": dequantized once into f32 arrays on the host, uploaded when a pass reaches that
 *   layer (or that slice of the vocabulary), then freed. Backend memory holds one layer at a
 *   time: on wasm this moves the 4 GiB heap limit from the whole model to one layer.
 * - "host-packed": the same, but kept as the GGUF's packed bytes (as small as the file) and
 *   dequantized at every upload: least memory, a dequantize per layer per pass.
 * The token embedding always stays packed on the host: a step needs only its batch's rows.
 *
 * With native products (trainer/native/gemm.ts, on the wasm and cpu backends) a streamed
 * weight is never uploaded: layer() and headChunk() hand out its host f32 rows, which the
 * products read in place. The memory plan then prefers host placements (hostProducts).
 */
import * as tf from "@tensorflow/tfjs-core";
import { dequantize, typeName, canDequantize } from "../../models/gguf/dequant.js";
import { findTensor, readTensorBytes, type GgufFile } from "../../models/gguf/reader.js";
import { GGML_TYPE_TRAITS, GgmlType, GgufError, type GgufTensorInfo } from "../../models/gguf/types.js";
import type { ModelConfig } from "../../models/arch/config.js";
import { LINEAR_NAMES, linearShape, DEFAULT_HEAD_CHUNK_ROWS, type LinearName, type WeightPlacement } from "../../models/arch/layout.js";
import { alignedFloats, hostMatrix, nativeProductsFor } from "../native/gemm.js";
import { isHostMatrix, type FrozenMatrix } from "./fast-matmul.js";

export { LINEAR_NAMES, linearShape, DEFAULT_HEAD_CHUNK_ROWS, type LinearName, type Placement, type WeightPlacement } from "../../models/arch/layout.js";

export interface LayerWeights {
  attnNorm: tf.Tensor1D;
  /** [out, in] each (GGUF layout): tensors, or host matrices for the native products. */
  linear: Record<LinearName, FrozenMatrix>;
  /** qwen2 only. */
  bias?: { q: tf.Tensor1D; k: tf.Tensor1D; v: tf.Tensor1D };
  /** qwen3 only: [headDim]. */
  qNorm?: tf.Tensor1D;
  kNorm?: tf.Tensor1D;
  ffnNorm: tf.Tensor1D;
}

/** A tensor as stored in the GGUF: packed bytes (dequantized on demand), or already f32. */
interface Packed {
  name: string;
  type: GgmlType;
  /** ggml ne. */
  dims: number[];
  bytes: Uint8Array;
  /** The dequantized values, when kept ("host-f32"): then `bytes` is empty. */
  f32?: Float32Array;
}

/** The tensor names of block `l` that the forward pass reads, with their ne. */
function layerTensorSpecs(config: ModelConfig, l: number): Array<{ key: string; name: string; ne: number[] }> {
  const p = `blk.${l}.`;
  const specs = [
    { key: "attnNorm", name: `${p}attn_norm.weight`, ne: [config.nEmbd] },
    { key: "ffnNorm", name: `${p}ffn_norm.weight`, ne: [config.nEmbd] },
    ...LINEAR_NAMES.map((n) => ({ key: n, name: `${p}${n}.weight`, ne: linearShape(config, n) })),
  ];
  if (config.qkvBias) {
    for (const [k, n] of [
      ["bq", "attn_q"],
      ["bk", "attn_k"],
      ["bv", "attn_v"],
    ] as const) {
      specs.push({ key: k, name: `${p}${n}.bias`, ne: [linearShape(config, n)[1]] });
    }
  }
  if (config.qkNorm) {
    specs.push({ key: "qNorm", name: `${p}attn_q_norm.weight`, ne: [config.headDim] }, { key: "kNorm", name: `${p}attn_k_norm.weight`, ne: [config.headDim] });
  }
  return specs;
}

function checkedInfo(file: GgufFile, name: string, ne: number[]): GgufTensorInfo {
  const info = findTensor(file, name);
  if (!info) throw new GgufError(file.path, `missing tensor '${name}'`);
  if (info.dims.length !== ne.length || info.dims.some((d, i) => d !== ne[i])) {
    throw new GgufError(file.path, `tensor '${name}' has shape [${info.dims.join(", ")}], expected [${ne.join(", ")}]`);
  }
  if (!canDequantize(info.type)) throw new GgufError(file.path, `tensor '${name}' has unsupported tensor type ${typeName(info.type)}`);
  return info;
}

function readPacked(file: GgufFile, info: GgufTensorInfo): Packed {
  // A view into a loaded data section is copied: the model must not pin the whole file.
  const bytes = readTensorBytes(file, info);
  return { name: info.name, type: info.type, dims: [...info.dims], bytes: file.data ? bytes.slice() : bytes };
}

/** Bytes of one row (ne[0] values) of a packed tensor. */
function rowBytes(p: Packed): number {
  const t = GGML_TYPE_TRAITS[p.type]!;
  return (p.dims[0] / t.blockSize) * t.typeSize;
}

/** Rows [start, start+count) of a packed 2-D tensor as f32 [count * ne0]. */
function dequantRows(p: Packed, start: number, count: number): Float32Array {
  if (p.f32) return p.f32.subarray(start * p.dims[0], (start + count) * p.dims[0]);
  const rb = rowBytes(p);
  const view = p.bytes.subarray(start * rb, (start + count) * rb);
  const out = dequantize(p.type, view, count * p.dims[0], p.name);
  // An F32 result may alias the packed bytes; tensors copy their input, so that is fine.
  return out;
}

function dequantAll(p: Packed): Float32Array {
  return dequantRows(p, 0, p.dims.length > 1 ? p.dims.slice(1).reduce((a, b) => a * b, 1) : 1);
}

/** The same tensor held as f32 on the host (its packed bytes dropped). */
function toHostF32(p: Packed): Packed {
  // A copy: an F32 tensor's dequantized view aliases the packed bytes. It starts a cache line,
  // and so does every row of 16k floats (every real shape's): the native nn product (dy·W) ran
  // 1.11-1.17x faster on the FFN's and the head's weights so placed (gemm.ts alignedFloats).
  const values = dequantAll(p);
  const f32 = alignedFloats(values.length);
  f32.set(values);
  return { ...p, bytes: new Uint8Array(0), f32 };
}

const byteSize = (p: Packed) => p.bytes.byteLength + (p.f32?.byteLength ?? 0);

/** tfjs shape (outermost first) of a ggml ne. */
const tfShape = (ne: number[]): number[] => [...ne].reverse();

/**
 * The frozen base. `layer(l)` / `headChunk(c)` hand out backend tensors that stay valid until
 * the matching release call; with "device" placement they are the resident tensors and release
 * does nothing, with "streamed" they are fresh uploads that release disposes.
 */
export class FrozenBase {
  readonly placement: WeightPlacement;
  /** Storage type of each block's linear weights (activation-rounding emulation). */
  readonly types: Array<Record<LinearName, GgmlType>>;
  readonly outputType: GgmlType;
  readonly outputNorm: tf.Tensor1D;
  /** `rope_freqs.weight` (Llama 3.x): per rotary pair, θ is divided by this factor. */
  readonly ropeFreqFactors?: Float32Array;
  readonly headChunkRows: number;
  readonly numHeadChunks: number;
  /** Streamed weights are handed out as host matrices for the native products. */
  readonly hostProducts: boolean;
  private readonly embedding: Packed;
  private readonly output: Packed;
  private readonly packedLayers: Array<Map<string, Packed>> | null;
  private readonly deviceLayers: LayerWeights[] | null;
  private readonly deviceHead: tf.Tensor2D[] | null;
  private disposed = false;

  constructor(
    file: GgufFile,
    readonly config: ModelConfig,
    placement: WeightPlacement,
    headChunkRows = DEFAULT_HEAD_CHUNK_ROWS,
    hostProducts?: boolean,
  ) {
    this.placement = { ...placement };
    this.hostProducts = hostProducts ?? nativeProductsFor(tf.getBackend()) !== null;
    const { nEmbd, nVocab } = config;
    this.headChunkRows = Math.max(1, Math.min(headChunkRows, nVocab));
    this.numHeadChunks = Math.ceil(nVocab / this.headChunkRows);
    const made: tf.Tensor[] = [];
    try {
      const embedding = readPacked(file, checkedInfo(file, "token_embd.weight", [nEmbd, nVocab]));
      // The embedding is only gathered from (rows), so it stays packed unless it is also the
      // output projection and that is kept as f32.
      this.embedding = config.tiedOutput && placement.head === "host-f32" ? toHostF32(embedding) : embedding;
      const output = config.tiedOutput ? this.embedding : readPacked(file, checkedInfo(file, "output.weight", [nEmbd, nVocab]));
      this.output = !config.tiedOutput && placement.head === "host-f32" ? toHostF32(output) : output;
      this.outputType = this.output.type;
      const norm = checkedInfo(file, "output_norm.weight", [nEmbd]);
      this.outputNorm = tf.tensor1d(dequantAll(readPacked(file, norm)));
      made.push(this.outputNorm);
      const rf = findTensor(file, "rope_freqs.weight");
      if (rf) {
        if (rf.dims.length !== 1 || rf.dims[0] !== config.ropeDim / 2) {
          throw new GgufError(file.path, `tensor 'rope_freqs.weight' has shape [${rf.dims.join(", ")}], expected [${config.ropeDim / 2}]`);
        }
        this.ropeFreqFactors = dequantAll(readPacked(file, rf)).slice();
      }
      this.types = [];
      const packedLayers: Array<Map<string, Packed>> = [];
      const deviceLayers: LayerWeights[] = [];
      for (let l = 0; l < config.nLayer; l++) {
        const packed = new Map<string, Packed>();
        for (const s of layerTensorSpecs(config, l)) packed.set(s.key, readPacked(file, checkedInfo(file, s.name, s.ne)));
        this.types.push(Object.fromEntries(LINEAR_NAMES.map((n) => [n, packed.get(n)!.type])) as Record<LinearName, GgmlType>);
        if (placement.layers === "device") {
          const w = upload(packed);
          deviceLayers.push(w);
          made.push(...layerTensors(w));
        } else {
          packedLayers.push(placement.layers === "host-f32" ? new Map([...packed].map(([k, p]) => [k, toHostF32(p)])) : packed);
        }
      }
      this.packedLayers = placement.layers !== "device" ? packedLayers : null;
      this.deviceLayers = placement.layers === "device" ? deviceLayers : null;
      if (placement.head === "device") {
        const chunks: tf.Tensor2D[] = [];
        for (let c = 0; c < this.numHeadChunks; c++) {
          const t = this.uploadHeadChunk(c, true) as tf.Tensor2D;
          chunks.push(t);
          made.push(t);
        }
        this.deviceHead = chunks;
      } else {
        this.deviceHead = null;
      }
    } catch (e) {
      tf.dispose(made);
      throw e;
    }
  }

  /** Block `l`'s weights on the backend, valid until releaseLayer(l, w). */
  layer(l: number): LayerWeights {
    this.checkAlive();
    if (this.deviceLayers) return this.deviceLayers[l];
    return upload(this.packedLayers![l], this.hostProducts);
  }

  releaseLayer(w: LayerWeights): void {
    if (this.deviceLayers) return;
    tf.dispose(layerTensors(w));
  }

  /** Rows [c·headChunkRows, …) of the output projection, [rows, nEmbd]; valid until releaseHeadChunk. */
  headChunk(c: number): { start: number; w: FrozenMatrix } {
    this.checkAlive();
    const start = c * this.headChunkRows;
    return { start, w: this.deviceHead ? this.deviceHead[c] : this.uploadHeadChunk(c) };
  }

  releaseHeadChunk(w: FrozenMatrix): void {
    if (!this.deviceHead && !isHostMatrix(w)) w.dispose();
  }

  /** Token embeddings of `ids`, [ids.length, nEmbd] (dequantized on the host, rows only). */
  embed(ids: ArrayLike<number>): tf.Tensor2D {
    return this.rows(this.embedding, ids);
  }

  /** Rows of the output projection for `ids`, [ids.length, nEmbd]. */
  outputRows(ids: ArrayLike<number>): tf.Tensor2D {
    return this.rows(this.output, ids);
  }

  /** Bytes this base holds on the host (packed) and on the backend (f32), by part. */
  memory(): { hostBytes: number; deviceBytes: number } {
    let host = byteSize(this.embedding) + (this.output === this.embedding ? 0 : byteSize(this.output));
    for (const layer of this.packedLayers ?? []) for (const p of layer.values()) host += byteSize(p);
    let device = this.outputNorm.size * 4;
    for (const w of this.deviceLayers ?? []) device += layerTensors(w).reduce((a, t) => a + t.size * 4, 0);
    for (const t of this.deviceHead ?? []) device += t.size * 4;
    return { hostBytes: host, deviceBytes: device };
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const all: tf.Tensor[] = [this.outputNorm, ...(this.deviceHead ?? [])];
    for (const w of this.deviceLayers ?? []) all.push(...layerTensors(w));
    tf.dispose(all);
    this.packedLayers?.splice(0);
  }

  private rows(p: Packed, ids: ArrayLike<number>): tf.Tensor2D {
    this.checkAlive();
    const D = this.config.nEmbd;
    const out = new Float32Array(ids.length * D);
    for (let i = 0; i < ids.length; i++) out.set(dequantRows(p, ids[i], 1), i * D);
    return tf.tensor2d(out, [ids.length, D]);
  }

  /** Slice c of the output projection: a tensor when asked (a resident head) or without native products. */
  private uploadHeadChunk(c: number, asTensor = false): FrozenMatrix {
    const start = c * this.headChunkRows;
    const rows = Math.min(this.headChunkRows, this.config.nVocab - start);
    const data = dequantRows(this.output, start, rows);
    if (this.hostProducts && !asTensor) return hostMatrix(data, rows, this.config.nEmbd);
    return tf.tensor2d(data, [rows, this.config.nEmbd]);
  }

  private checkAlive(): void {
    if (this.disposed) throw new Error("the base model has been disposed");
  }
}

function upload(packed: Map<string, Packed>, hostProducts = false): LayerWeights {
  const made: tf.Tensor[] = [];
  const t = (key: string) => {
    const p = packed.get(key)!;
    const x = tf.tensor(dequantAll(p), tfShape(p.dims), "float32");
    made.push(x);
    return x;
  };
  const host = (key: string) => {
    const p = packed.get(key)!;
    return hostMatrix(dequantAll(p), p.dims[1], p.dims[0]);
  };
  try {
    const w: LayerWeights = {
      attnNorm: t("attnNorm") as tf.Tensor1D,
      ffnNorm: t("ffnNorm") as tf.Tensor1D,
      linear: Object.fromEntries(LINEAR_NAMES.map((n) => [n, hostProducts ? host(n) : t(n)])) as Record<LinearName, FrozenMatrix>,
    };
    if (packed.has("bq")) w.bias = { q: t("bq") as tf.Tensor1D, k: t("bk") as tf.Tensor1D, v: t("bv") as tf.Tensor1D };
    if (packed.has("qNorm")) {
      w.qNorm = t("qNorm") as tf.Tensor1D;
      w.kNorm = t("kNorm") as tf.Tensor1D;
    }
    return w;
  } catch (e) {
    tf.dispose(made);
    throw e;
  }
}

function layerTensors(w: LayerWeights): tf.Tensor[] {
  const all: tf.Tensor[] = [w.attnNorm, w.ffnNorm, ...Object.values(w.linear).filter((m): m is tf.Tensor2D => !isHostMatrix(m))];
  if (w.bias) all.push(w.bias.q, w.bias.k, w.bias.v);
  if (w.qNorm) all.push(w.qNorm);
  if (w.kNorm) all.push(w.kNorm);
  return all;
}
