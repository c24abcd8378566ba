/**
 * The trainer's memory plan: from a model's shapes (the GGUF header only), the backend, the
 * LoRA rank and the step's tokens, what training will hold on the backend and on the host,
 * compared with what is there. It chooses where the frozen weights live (weights.ts: resident
 * on the backend, or packed on the host and streamed per block / per vocabulary slice) and how
 * many tokens a micro-batch may have (a step's batch is split into micro-batches whose
 * gradients add up), or refuses, before anything is loaded, with needed vs available and what
 * would fit. Pure arithmetic: tests compare it with measured peaks (it must not under-estimate).
 */
import { readGguf, findTensor, type GgufFile } from "../gguf/reader.js";
import { readModelConfig, type ModelConfig } from "../arch/config.js";
import { LINEAR_NAMES, blockLinearElements, linearShape, DEFAULT_HEAD_CHUNK_ROWS, type WeightPlacement } from "../arch/layout.js";

/** Sizes of a model's parts, from its GGUF header. */
export interface ModelFootprint {
  config: ModelConfig;
  /** Weights in one block (f32 elements, linear + norms + biases). */
  layerElements: number;
  /** Packed bytes (as stored in the GGUF) of all blocks, of the embedding, of the output projection if untied. */
  layersPackedBytes: number;
  embeddingPackedBytes: number;
  outputPackedBytes: number;
  fileBytes: number;
}

/** What the chosen backend can hold. */
export interface BackendMemory {
  /** tfjs backend name: "wasm", "cpu", "tensorflow", "webgpu". */
  name: string;
  /** Memory its tensors can use, when known (wasm: min(RAM, 4 GiB heap)); undefined: unknown (GPU). */
  deviceBytes?: number;
  /** Its tensors live in the process's own memory (wasm, cpu, tfjs-node on CPU). */
  sharesHostMemory: boolean;
  /** Largest single tensor the backend takes (WebGPU's maxStorageBufferBindingSize), when limited. */
  maxTensorBytes?: number;
  /**
   * The frozen weights' products run natively from host f32 rows (trainer/native/gemm.ts): a
   * resident copy on the backend gains nothing, so host placements come first.
   */
  hostProducts?: boolean;
  /**
   * SwiGLU runs natively (trainer/model/swiglu.ts): a block's tape keeps gate and up only, not
   * σ(gate) and silu(gate).
   */
  hostSwiglu?: boolean;
  /**
   * A LoRA-adapted layer on a host weight is one op (trainer/model/lora-linear.ts): it keeps its
   * output and the [rows, rank] product only, not the frozen product and the branch apart.
   */
  hostLora?: boolean;
  /**
   * RMSNorm runs natively (trainer/model/norm.ts): a norm keeps its input and output only, not
   * x², x·rsqrt and their copies.
   */
  hostNorm?: boolean;
  /**
   * Attention's causal softmax runs natively (trainer/model/attention-softmax.ts): a head keeps
   * its probabilities only, not the scaled and masked scores beside them.
   */
  hostSoftmax?: boolean;
  /**
   * Attention is one host op (trainer/model/attention-host.ts): its tape keeps q, k, v (counted
   * as their layers' outputs), the probabilities and its output, not head-major copies of each;
   * its raw scores are host scratch of one KV group at a time.
   */
  hostAttention?: boolean;
}

/** The native pieces that change what a block's tape holds. */
type NativeParts = Pick<BackendMemory, "hostProducts" | "hostSwiglu" | "hostLora" | "hostNorm" | "hostSoftmax" | "hostAttention">;

/**
 * [T, T] score-sized tensors a query head holds in attention: raw, scaled, masked, probabilities,
 * a temporary; natively raw and probabilities; as one host op the probabilities, and the scratch
 * (raw scores, their gradient) of one group, counted as a second set.
 */
const scoreTensors = (native: NativeParts) => (native.hostSoftmax || native.hostAttention ? 2 : 5);

export interface PlanRequest {
  shape: ModelFootprint;
  backend: BackendMemory;
  /** RAM the trainer may use (MemAvailable at start). */
  hostAvailableBytes: number;
  rank: number;
  /** Longest sequence a sample may have (the trainer cuts samples to it). */
  maxContext: number;
  /** Samples per optimizer step. */
  batchSize: number;
  /** LoRA targets per block (default all seven linear layers). */
  targets?: number;
  /**
   * Keep the activations of as many blocks as memory allows after the placement and the
   * micro-batch (no recompute in the backward for them). Default true; false: recompute every block.
   */
  keepActivations?: boolean;
}

export interface Part {
  what: string;
  bytes: number;
}

export interface MemoryPlan {
  fits: boolean;
  /** tfjs backend the plan is for. */
  backend: string;
  placement: WeightPlacement;
  /** Longest sample the trainer keeps (≤ the requested context; lower when memory is short). */
  maxContext: number;
  requestedMaxContext: number;
  /** Tokens (padded sequences × length) per micro-batch; a step's batch is split to fit. */
  microBatchTokens: number;
  /** Rows of the output projection per vocabulary slice. */
  headChunkRows: number;
  /**
   * Blocks (the last ones) whose forward activations a step keeps for the backward instead of
   * recomputing them: as many as fit beside the rest (a streamed block's weights are uploaded
   * again for its backward either way).
   */
  keptBlocks: number;
  /** Longest context one sample can have and still fit, with the leanest placement. */
  maxContextThatFits: number;
  device: Part[];
  host: Part[];
  needDeviceBytes: number;
  needHostBytes: number;
  /** Undefined when the backend does not say (GPU memory). */
  availableDeviceBytes?: number;
  availableHostBytes: number;
  /** One line: what was chosen, or why it does not fit and what would. */
  summary: string;
}

const F32 = 4;
/** Bytes the warm trainer's pass cache may hold in rows (trainer/train/passCache.ts reads it: one bound, planned and kept). */
export const PASS_CACHE_ROW_BYTES = 64 * 1024 * 1024;
/** Node, tfjs, the tokenizer's vocabulary and the IPC/JS objects of a trainer process. */
const HOST_BASELINE_BYTES = 400 * 2 ** 20;
/**
 * Allocator slack on the device: GPU buffer pools; and wasm's heap, which only grows and which
 * emmalloc fragments under the step's changing tensor sizes (measured on the Qwen2.5-0.5B
 * shape, 1 × 128 tokens, streamed: a 930 MiB heap for 738 MiB of planned tensors, 1.26x).
 */
const DEVICE_SLACK = 1.15;
const WASM_HEAP_SLACK = 1.4;
/** The head's logits budget in floats (head.ts LOGIT_BUDGET): a slice's rows × its vocabulary rows at most. */
const LOGIT_BUDGET = 8 * 1024 * 1024;
/** The logits buffers alive at once. */
const HEAD_LOGIT_BUFFERS = 4;
/** Micro-batches smaller than this are not worth splitting a step into. */
const MIN_MICRO_TOKENS = 64;

export function readModelFootprint(path: string): ModelFootprint {
  return modelFootprintOf(readGguf(path));
}

export function modelFootprintOf(file: GgufFile): ModelFootprint {
  const config = readModelConfig(file);
  const bytes = (name: string) => findTensor(file, name)?.byteLength ?? 0;
  let layersPacked = 0;
  for (const t of file.tensors) if (t.name.startsWith("blk.")) layersPacked += t.byteLength;
  const { nEmbd, nVocab } = config;
  return {
    config,
    layerElements: layerElementsOf(config),
    layersPackedBytes: layersPacked,
    embeddingPackedBytes: bytes("token_embd.weight") || nEmbd * nVocab * F32,
    outputPackedBytes: config.tiedOutput ? 0 : bytes("output.weight"),
    fileBytes: file.fileSize,
  };
}

/** Weights of one block (linear layers, norms, biases), as f32 elements. */
export function layerElementsOf(config: ModelConfig): number {
  let n = 2 * config.nEmbd + blockLinearElements(config);
  if (config.qkvBias) n += linearShape(config, "attn_q")[1] + linearShape(config, "attn_k")[1] + linearShape(config, "attn_v")[1];
  if (config.qkNorm) n += 2 * config.headDim;
  return n;
}

/**
 * A shape without a file (a catalog model not downloaded yet): the file's bytes are shared
 * between blocks and embeddings in proportion to their weights (quantization is about uniform).
 */
export function footprintFromConfig(config: ModelConfig, fileBytes: number): ModelFootprint {
  const layerElements = layerElementsOf(config);
  const emb = config.nEmbd * config.nVocab;
  const total = config.nLayer * layerElements + emb * (config.tiedOutput ? 1 : 2);
  const perElement = fileBytes / total;
  return {
    config,
    layerElements,
    layersPackedBytes: Math.round(config.nLayer * layerElements * perElement),
    embeddingPackedBytes: Math.round(emb * perElement),
    outputPackedBytes: config.tiedOutput ? 0 : Math.round(emb * perElement),
    fileBytes,
  };
}

/** LoRA parameters (A and B of every target in every block). */
export function loraParameters(config: ModelConfig, rank: number, targets: number = LINEAR_NAMES.length): number {
  let perLayer = 0;
  for (const n of LINEAR_NAMES.slice(0, targets)) {
    const [i, o] = linearShape(config, n);
    perLayer += rank * (i + o);
  }
  return perLayer * config.nLayer;
}

/**
 * Floats one block's taped recompute holds per token (the activations tf.grads keeps for the
 * backward pass, counted from block.ts), excluding attention scores. Gradients alive at the
 * same time are covered by the factor applied by the caller.
 *
 * With native products (`hostProducts`) a frozen linear layer is counted as its input, its
 * output and LoRA's parts (no transposed or packed operands on the backend): the count for the
 * backend's own products kept no block of the cycle's 16 × 81 micro-batch on the 0.5B shape,
 * where a kept block measured 262 MiB (it counted 654; this one 353, and 4 blocks kept).
 * test/trainer/memoryPlan.test.ts checks both stay above what a step holds. With native SwiGLU
 * (`hostSwiglu`) the FFN's gate keeps nothing beyond its layers' outputs; with the LoRA layer as
 * one op (`hostLora`) a layer keeps its output and the rank product (its input is the output
 * counted before it); with native RMSNorm (`hostNorm`) a norm keeps its input and output. A 16 × 81 step of the 0.5B widths cut to 2 kept blocks measured 1,500 MiB,
 * 1,284 with native SwiGLU and 751 with the LoRA layer too.
 */
function tapeFloatsPerToken(c: ModelConfig, rank: number, native: NativeParts = {}): number {
  const q = c.nHead * c.headDim;
  const kv = c.nHeadKv * c.headDim;
  const v = c.nHeadKv * c.headDimV;
  const o = c.nHead * c.headDimV;
  const D = c.nEmbd;
  const linear = (inDim: number, out: number) => (native.hostLora ? out + rank : native.hostProducts ? inDim + out + 2 * rank : 2 * inDim + 5 * out + 2 * rank);
  const perNorm = native.hostNorm ? 2 : 4;
  const norms = 2 * (perNorm * D) + (c.qkNorm ? perNorm * (q + kv) : 0);
  const qkv = linear(D, q) + linear(D, kv) + linear(D, v) + (c.qkvBias ? q + kv + v : 0);
  const rope = 5 * (q + kv);
  // tfjs's composition keeps head-major copies (transposes, unstacked groups) of q, k, v and its output.
  const attnShapes = native.hostAttention ? o : 3 * (q + kv + v) + 3 * o;
  // tfjs's SwiGLU keeps σ(gate) and silu(gate) and copies of what its kernels save.
  const gate = native.hostSwiglu ? 0 : 4 * c.nFf;
  const mlp = 2 * linear(D, c.nFf) + gate + linear(c.nFf, D);
  return norms + qkv + rope + attnShapes + linear(o, D) + mlp + 4 * D;
}

/**
 * Device bytes one block's kept activations hold until its backward (its recorded tape: the
 * taped floats and the attention scores, once; the gradients are already counted per block).
 */
export function keptBlockBytes(c: ModelConfig, rank: number, seqs: number, T: number, native: NativeParts = {}): number {
  return (tapeFloatsPerToken(c, rank, native) * seqs * T + scoreTensors(native) * c.nHead * T * T * seqs) * F32;
}

/** Device bytes of one micro-batch of `seqs` sequences × `T` tokens (activations only). */
function activationBytes(c: ModelConfig, rank: number, seqs: number, T: number, native: NativeParts = {}): number {
  const N = seqs * T;
  const kept = (c.nLayer + 2) * N * c.nEmbd; // block inputs, final output, its gradient
  // Attention: scores, masked scores, softmax out and its temporaries per query head, [T, T] per sequence.
  const scores = scoreTensors(native) * c.nHead * T * T * seqs;
  // Taped block + the gradients that exist at the same time during its backward: ×2.
  const block = 2 * (tapeFloatsPerToken(c, rank, native) * N + scores);
  const ropeMask = T * T + 2 * T * c.ropeDim;
  return (kept + block + ropeMask) * F32;
}

/** Expectation parts of the head (one [rows, D] per vocabulary slice) for `rows` scored rows. */
function headBytes(c: ModelConfig, rows: number, chunkRows: number): number {
  const slices = Math.ceil(c.nVocab / chunkRows);
  // head.ts takes rows in blocks of LOGIT_BUDGET / chunkRows: fewer rows, smaller logits.
  const logits = Math.min(rows, Math.max(1, Math.floor(LOGIT_BUDGET / chunkRows))) * chunkRows;
  return HEAD_LOGIT_BUFFERS * logits * F32 + (slices + 3) * rows * c.nEmbd * F32;
}

/** How a placement reads in a summary. */
export function describePlacement(p: WeightPlacement): string {
  const part = (x: WeightPlacement["layers"]) =>
    x === "device" ? "on the backend" : x === "host-f32" ? "streamed from f32 copies in RAM" : "streamed from the packed file data";
  return p.layers === p.head ? `all weights ${part(p.layers)}` : `blocks ${part(p.layers)}, vocabulary ${part(p.head)}`;
}

const GiB = 2 ** 30;
export function formatBytes(n: number): string {
  return n >= GiB ? `${(n / GiB).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(0)} MiB`;
}

export interface Estimate {
  device: Part[];
  host: Part[];
  needDevice: number;
  needHost: number;
  fits: boolean;
}

/** Rows of the output projection per vocabulary slice for this backend (its largest tensor). */
export function headChunkRowsFor(shape: ModelFootprint, backend: BackendMemory): number {
  const c = shape.config;
  let rows = Math.min(DEFAULT_HEAD_CHUNK_ROWS, c.nVocab);
  if (backend.maxTensorBytes) rows = Math.max(1, Math.min(rows, Math.floor(backend.maxTensorBytes / (c.nEmbd * F32))));
  return rows;
}

/**
 * What one placement needs with micro-batches of `seqs` sequences × `T` tokens, keeping the
 * activations of `kept` blocks.
 */
export function estimate(req: PlanRequest, placement: WeightPlacement, seqs: number, T: number, kept = 0): Estimate {
  const { shape, backend, rank } = req;
  const c = shape.config;
  const lora = loraParameters(c, rank, req.targets ?? LINEAR_NAMES.length);
  const headChunkRows = headChunkRowsFor(shape, backend);
  const layersF32 = c.nLayer * shape.layerElements * F32;
  const headF32 = c.nVocab * c.nEmbd * F32;
  // wasm: XNNPACK caches a packed copy of every resident matrix used as a right operand
  // (the backward's dy·W, the head's p·W), measured: 333 MiB of weights → 715 MiB of heap.
  const residentFactor = backend.name === "wasm" ? 2 : 1;
  const loraBytes = 7 * lora * F32; // A, B, AdamW m and v, gradients, clipped copies, update temporaries
  const device: Part[] = [];
  // With native products a streamed weight is never uploaded: they read it in RAM.
  const streamed = (what: string, bytes: number): Part =>
    backend.hostProducts ? { what: `${what}: none (native products read it in RAM)`, bytes: 0 } : { what, bytes };
  device.push(
    placement.layers === "device"
      ? { what: `frozen blocks (f32${residentFactor > 1 ? " + XNNPACK's packed copies" : ""})`, bytes: layersF32 * residentFactor }
      : streamed("one streamed block (f32, and its packed copy)", 2 * shape.layerElements * F32),
  );
  device.push(
    placement.head === "device"
      ? { what: `output projection (f32${residentFactor > 1 ? " + packed copies" : ""})`, bytes: headF32 * residentFactor }
      : streamed("one streamed vocabulary slice (f32, and its packed copy)", 2 * headChunkRows * c.nEmbd * F32),
  );
  device.push({ what: `LoRA rank ${rank} + AdamW state + gradients`, bytes: loraBytes });
  // The warm trainer's pass cache (trainer/train/passCache.ts): rows the next passes reuse, bounded.
  device.push({ what: "pass cache (rows kept between cycles)", bytes: PASS_CACHE_ROW_BYTES });
  // The LoRA layer is one op only on host weights (a resident weight is a backend tensor).
  const native: NativeParts = { ...backend, hostLora: backend.hostLora === true && placement.layers !== "device" };
  device.push({ what: `activations (${seqs} × ${T} tokens, block-by-block backward)`, bytes: activationBytes(c, rank, seqs, T, native) });
  if (kept > 0)
    device.push({
      what: `activations kept for ${kept} of ${c.nLayer} blocks (not recomputed)`,
      bytes: kept * keptBlockBytes(c, rank, seqs, T, native),
    });
  device.push({ what: "head (logits slices, E_p[W] parts)", bytes: headBytes(c, seqs * T, headChunkRows) });
  const needDevice = Math.ceil(device.reduce((a, p) => a + p.bytes, 0) * (backend.name === "wasm" ? WASM_HEAP_SLACK : DEVICE_SLACK));
  const host: Part[] = [{ what: "Node, tfjs, tokenizer", bytes: HOST_BASELINE_BYTES }];
  host.push({ what: "packed embeddings", bytes: shape.embeddingPackedBytes + shape.outputPackedBytes });
  if (placement.head === "host-f32") host.push({ what: "output projection (f32, streamed)", bytes: headF32 });
  if (placement.layers === "host-f32") host.push({ what: "frozen blocks (f32, streamed)", bytes: layersF32 });
  if (placement.layers === "host-packed") host.push({ what: "packed blocks (streamed)", bytes: shape.layersPackedBytes });
  // Uploads pass through a dequantized f32 copy on the host first.
  host.push({ what: "dequantize buffers", bytes: Math.max(shape.layerElements, headChunkRows * c.nEmbd) * F32 });
  if (backend.sharesHostMemory) host.push({ what: `${backend.name} tensors`, bytes: needDevice });
  const needHost = host.reduce((a, p) => a + p.bytes, 0);
  const fits = (backend.deviceBytes === undefined || needDevice <= backend.deviceBytes) && needHost <= req.hostAvailableBytes;
  return { device, host, needDevice, needHost, fits };
}

/**
 * How many blocks' activations fit beside the rest with micro-batches of `seqs` × `T` tokens (the
 * largest count that fits, 0 when asked not to keep any). A step whose micro-batch is smaller
 * than the plan's keeps more: the trainer asks per micro-batch (trainer/plan/loadForTraining.ts).
 */
export function keptBlocksThatFit(req: PlanRequest, placement: WeightPlacement, seqs: number, T: number): number {
  if (req.keepActivations === false) return 0;
  let lo = 0;
  let hi = req.shape.config.nLayer;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (estimate(req, placement, seqs, T, mid).fits) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Below this many tokens of context a model is refused rather than trained on scraps. */
export const MIN_TRAIN_CONTEXT = 256;

/** Fastest first: resident, then streamed from f32 host copies, then from the packed file data. */
const PLACEMENTS: WeightPlacement[] = [
  { layers: "device", head: "device" },
  { layers: "device", head: "host-f32" },
  { layers: "host-f32", head: "host-f32" },
  { layers: "host-f32", head: "host-packed" },
  { layers: "host-packed", head: "host-packed" },
];

/**
 * Plans training memory: the fastest placement that fits one sequence of the requested
 * context, with the largest micro-batch up to a whole step (batchSize × maxContext). When
 * nothing fits at that context, the context is lowered (samples keep the end of their prompt)
 * as long as at least MIN_TRAIN_CONTEXT tokens fit; below that the model is refused.
 */
export function planMemory(req: PlanRequest): MemoryPlan {
  const { shape, backend } = req;
  const c = shape.config;
  const headChunkRows = headChunkRowsFor(shape, backend);
  const deviceAvail = backend.deviceBytes;
  const hostAvail = req.hostAvailableBytes;
  const fitsAt = (p: WeightPlacement, seqs: number, T: number) => estimate(req, p, seqs, T).fits;
  const lean = PLACEMENTS[PLACEMENTS.length - 1];
  const maxContextFor = (p: WeightPlacement): number => {
    let lo = 0;
    let hi = Math.max(req.maxContext, c.contextLength);
    if (fitsAt(p, 1, hi)) return hi;
    while (hi - lo > 16) {
      const mid = Math.floor((lo + hi) / 2);
      if (fitsAt(p, 1, mid)) lo = mid;
      else hi = mid;
    }
    return lo;
  };
  const leanContext = maxContextFor(lean);
  const context = Math.min(req.maxContext, leanContext);
  const base = {
    backend: backend.name,
    headChunkRows,
    availableDeviceBytes: deviceAvail,
    availableHostBytes: hostAvail,
    maxContextThatFits: leanContext,
    requestedMaxContext: req.maxContext,
  };
  if (context < Math.min(MIN_TRAIN_CONTEXT, req.maxContext)) {
    const e = estimate(req, lean, 1, req.maxContext);
    const short: string[] = [];
    if (deviceAvail !== undefined && e.needDevice > deviceAvail)
      short.push(`${formatBytes(e.needDevice)} of ${backend.name} memory, ${formatBytes(deviceAvail)} available`);
    if (e.needHost > hostAvail) short.push(`${formatBytes(e.needHost)} of RAM, ${formatBytes(hostAvail)} available`);
    return {
      ...base,
      fits: false,
      placement: lean,
      maxContext: 0,
      microBatchTokens: 0,
      keptBlocks: 0,
      device: e.device,
      host: e.host,
      needDeviceBytes: e.needDevice,
      needHostBytes: e.needHost,
      summary:
        `cannot train ${c.arch} (${c.nLayer} layers, dim ${c.nEmbd}, vocab ${c.nVocab}) on ${backend.name}: at a context of ${req.maxContext} tokens it needs ` +
        `${short.join(" and ")}; ${leanContext > 0 ? `only ${leanContext} tokens would fit` : "not even a short context fits"}: use a smaller model or a backend with more memory (a GPU)`,
    };
  }
  const order = backend.hostProducts ? PLACEMENTS.filter((p) => p.layers !== "device" && p.head !== "device") : PLACEMENTS;
  const placement = order.find((p) => fitsAt(p, 1, context)) ?? lean;
  // The largest micro-batch of whole sequences, up to the step's samples.
  let seqs = 1;
  while (seqs * 2 <= Math.max(1, req.batchSize) && fitsAt(placement, seqs * 2, context)) seqs *= 2;
  // Then the blocks whose activations fit beside that (the largest count that fits).
  const kept = keptBlocksThatFit(req, placement, seqs, context);
  const e = estimate(req, placement, seqs, context, kept);
  const micro = Math.max(MIN_MICRO_TOKENS, seqs * context);
  const limited = context < req.maxContext ? `; training context limited to ${context} tokens by memory (asked ${req.maxContext})` : "";
  const keptText = `; activations kept for ${kept} of ${c.nLayer} blocks${kept < c.nLayer ? " (the rest recomputed in the backward; more for shorter micro-batches)" : ""}`;
  return {
    ...base,
    fits: true,
    placement,
    maxContext: context,
    microBatchTokens: micro,
    keptBlocks: kept,
    device: e.device,
    host: e.host,
    needDeviceBytes: e.needDevice,
    needHostBytes: e.needHost,
    summary:
      `${backend.name}: ${describePlacement(placement)}; micro-batches of ${micro} tokens${limited}${keptText}; needs ${formatBytes(e.needDevice)} of ` +
      `${deviceAvail === undefined ? "unreported" : formatBytes(deviceAvail)} backend memory and ${formatBytes(e.needHost)} of ${formatBytes(hostAvail)} RAM`,
  };
}
