/**
 * LoRA adapters in and out of the app without tfjs: llama.cpp GGUF adapters and Hugging Face
 * PEFT directories, read into one plain form (in llama.cpp's layout), checked against a base
 * GGUF model, and written as either.
 *
 * The checks are the trainer's (readLoraAdapter in adapter-file.ts), done before anything is
 * written: architecture, layers the base has, the linear layers the trainer adapts, both
 * halves of each pair, shapes against the base's widths, one rank, finite values. An adapter
 * that passes is one the trainer can resume from and llama.cpp can load on that base.
 */
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "../../common/fs/atomicFile.js";
import { metaNumber, metaString, readGguf, readTensorF32, type GgufFile } from "../gguf/reader.js";
import { GgmlType, GgufError, GgufValueType, type GgufMetaValue } from "../gguf/types.js";
import { f32Bytes, writeGguf } from "../gguf/writer.js";
import { readModelConfig, type ModelConfig } from "../arch/config.js";
import { LINEAR_NAMES, linearShape, type LinearName } from "../arch/layout.js";
import {
  hfRepoFromMetadata,
  isRopePermuted,
  parsePeftTensorName,
  peftConfig,
  peftTensorName,
  permuteRowsGgufToHf,
  permuteRowsHfToGguf,
  readPeftConfig,
  PEFT_MODULES,
} from "./peft.js";
import { readSafetensors, SafetensorsError, tensorF32, writeSafetensors, type SafetensorsFile } from "./safetensors.js";

/** One adapted linear layer, in llama.cpp's layout. */
export interface AdapterPair {
  layer: number;
  target: LinearName;
  /** row-major [rank, in] (ggml ne = [in, rank]); the same as PEFT's lora_A */
  a: Float32Array;
  /** row-major [out, rank] (ggml ne = [rank, out]); PEFT's lora_B, RoPE-permuted for llama q/k */
  b: Float32Array;
}

/** An adapter read and checked against a base model, in llama.cpp's layout. */
export interface PortableAdapter {
  /** the base architecture it was checked against */
  arch: string;
  rank: number;
  /** llama.cpp's alpha: the scale is alpha / rank (as PEFT's lora_alpha / r) */
  alpha: number;
  /** ordered by layer, then LINEAR_NAMES */
  pairs: AdapterPair[];
  source: { format: "gguf" | "peft"; path: string; baseModel: string | null; dtypes: string[] };
  /** things worth saying that do not stop the import */
  warnings: string[];
}

/** Why an adapter cannot be used with this base; nothing was written. */
export class AdapterMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AdapterMismatchError";
  }
}

/** The base model's shape (the GGUF's metadata; no weights are read). */
export function readBaseConfig(basePath: string): { config: ModelConfig; file: GgufFile } {
  const file = readGguf(basePath);
  return { config: readModelConfig(file), file };
}

/** A GgufError's message without the file name in front. */
function ggufProblem(e: GgufError): string {
  return e.message.startsWith(`${e.file}: `) ? e.message.slice(e.file.length + 2) : e.message;
}

const GGUF_LORA_RE = /^blk\.(\d+)\.([a-z_]+)\.weight\.lora_([ab])$/;

const sortPairs = (pairs: AdapterPair[]) => pairs.sort((x, y) => x.layer - y.layer || LINEAR_NAMES.indexOf(x.target) - LINEAR_NAMES.indexOf(y.target));

/** A readable name for a layer in messages: "layer 3 q_proj (attn_q)". */
function where(layer: number, target: LinearName): string {
  return `layer ${layer} ${PEFT_MODULES[target].module} (${target})`;
}

/**
 * Checks halves against the base: layer index, pairs complete, shapes, one rank, finite
 * values. `a` is [rank, in], `b` is [out, rank], each with the shape it was stored with.
 */
function checkPairs(
  halves: Map<
    string,
    { layer: number; target: LinearName; a?: { v: Float32Array; shape: number[]; name: string }; b?: { v: Float32Array; shape: number[]; name: string } }
  >,
  base: ModelConfig,
): { rank: number; pairs: AdapterPair[] } {
  if (halves.size === 0) throw new AdapterMismatchError("the adapter has no LoRA tensors");
  let rank = 0;
  const pairs: AdapterPair[] = [];
  // Checked in model order, so the first problem named is the first layer's.
  const ordered = [...halves.values()].sort((x, y) => x.layer - y.layer || LINEAR_NAMES.indexOf(x.target) - LINEAR_NAMES.indexOf(y.target));
  for (const h of ordered) {
    const w = where(h.layer, h.target);
    if (h.layer >= base.nLayer)
      throw new AdapterMismatchError(
        `the adapter adapts layer ${h.layer}; the served model has ${base.nLayer} layers (${base.arch}, hidden size ${base.nEmbd}): it was made for another model`,
      );
    if (!h.a || !h.b) throw new AdapterMismatchError(`${w}: lora_${h.a ? "B" : "A"} is missing (only one half of the pair is in the file)`);
    const [nIn, nOut] = linearShape(base, h.target);
    const [ra, ina] = h.a.shape;
    const [outb, rb] = h.b.shape;
    if (h.a.shape.length !== 2 || h.b.shape.length !== 2)
      throw new AdapterMismatchError(`${w}: lora_A and lora_B must be matrices, found [${h.a.shape.join(", ")}] and [${h.b.shape.join(", ")}]`);
    if (ina !== nIn || outb !== nOut) {
      throw new AdapterMismatchError(
        `${w}: lora_A is [${h.a.shape.join(", ")}] and lora_B [${h.b.shape.join(", ")}] (rank, in / out, rank), but the served model's layer maps ${nIn} → ${nOut} (${base.arch}, hidden size ${base.nEmbd}, ${base.nHead} heads, ${base.nHeadKv} KV heads, FFN ${base.nFf}): it was made for another model`,
      );
    }
    if (ra !== rb) throw new AdapterMismatchError(`${w}: lora_A has rank ${ra} but lora_B has rank ${rb}`);
    if (ra < 1) throw new AdapterMismatchError(`${w}: rank 0`);
    if (rank !== 0 && ra !== rank) throw new AdapterMismatchError(`${w} has rank ${ra}, other layers have rank ${rank}: one rank for every layer is needed`);
    rank = ra;
    for (const [half, t] of [
      ["A", h.a],
      ["B", h.b],
    ] as const) {
      const bad = t.v.findIndex((x) => !Number.isFinite(x));
      if (bad >= 0) throw new AdapterMismatchError(`${w}: lora_${half} (${t.name}) holds ${t.v[bad]} at index ${bad}: the adapter is damaged`);
    }
    pairs.push({ layer: h.layer, target: h.target, a: h.a.v, b: h.b.v });
  }
  return { rank, pairs: sortPairs(pairs) };
}

/** Reads a llama.cpp LoRA GGUF and checks it against the base. */
export function readGgufAdapter(file: string, base: ModelConfig): PortableAdapter {
  let g: GgufFile;
  try {
    g = readGguf(file);
  } catch (e) {
    if (e instanceof GgufError) throw new AdapterMismatchError(`not a readable GGUF adapter: ${ggufProblem(e)}`);
    throw e;
  }
  const type = metaString(g, "general.type");
  const adapterType = metaString(g, "adapter.type");
  if (type !== "adapter" || adapterType !== "lora") {
    throw new AdapterMismatchError(
      `not a LoRA adapter (general.type=${type ?? "absent"}, adapter.type=${adapterType ?? "absent"})${type === "model" || type === undefined ? ": this looks like a model, not an adapter" : ""}`,
    );
  }
  const arch = metaString(g, "general.architecture");
  if (arch !== base.arch) throw new AdapterMismatchError(`the adapter is for architecture '${arch ?? "absent"}', the served model is '${base.arch}'`);
  const alphaRaw = metaNumber(g, "adapter.lora.alpha") ?? 0;
  const halves = new Map<
    string,
    { layer: number; target: LinearName; a?: { v: Float32Array; shape: number[]; name: string }; b?: { v: Float32Array; shape: number[]; name: string } }
  >();
  const dtypes = new Set<string>();
  for (const t of g.tensors) {
    const m = GGUF_LORA_RE.exec(t.name);
    if (!m) throw new AdapterMismatchError(`tensor '${t.name}' is not one the app can adapt (only blk.N.{${LINEAR_NAMES.join(",")}}.weight.lora_a/lora_b)`);
    const target = m[2] as LinearName;
    if (!(LINEAR_NAMES as readonly string[]).includes(target))
      throw new AdapterMismatchError(`tensor '${t.name}' adapts '${target}', which the app does not adapt (only ${LINEAR_NAMES.join(", ")})`);
    const layer = Number(m[1]);
    let v: Float32Array;
    try {
      v = readTensorF32(g, t);
    } catch (e) {
      throw new AdapterMismatchError(`tensor '${t.name}' cannot be read: ${e instanceof GgufError ? ggufProblem(e) : (e as Error).message}`);
    }
    dtypes.add(GgmlType[t.type] ?? String(t.type));
    // ggml ne = [in, rank] for lora_a (row-major [rank, in]); [rank, out] for lora_b (row-major [out, rank]).
    const shape = [...t.dims].reverse();
    const key = `${layer}:${target}`;
    const h = halves.get(key) ?? { layer, target };
    if (m[3] === "a") h.a = { v, shape, name: t.name };
    else h.b = { v, shape, name: t.name };
    halves.set(key, h);
  }
  const { rank, pairs } = checkPairs(halves, base);
  // alpha 0 means "scale = user scale" in llama.cpp: the same as alpha = rank.
  const alpha = alphaRaw > 0 ? alphaRaw : rank;
  return { arch: base.arch, rank, alpha, pairs, source: { format: "gguf", path: file, baseModel: null, dtypes: [...dtypes] }, warnings: [] };
}

/** The files of a PEFT adapter directory (or of the directory of a given safetensors file). */
export function peftFiles(p: string): { dir: string; config: string; weights: string } {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) throw new AdapterMismatchError(`${p}: no such file or directory`);
  const dir = st.isDirectory() ? p : path.dirname(p);
  const weights = st.isDirectory() ? path.join(dir, "adapter_model.safetensors") : p;
  const config = path.join(dir, "adapter_config.json");
  if (!fs.existsSync(weights)) {
    if (fs.existsSync(path.join(dir, "adapter_model.bin"))) {
      throw new AdapterMismatchError(
        `${dir} holds adapter_model.bin (a pickled PyTorch file), which is not read for safety: save the adapter with safetensors (PEFT's default, save_pretrained(..., safe_serialization=True))`,
      );
    }
    throw new AdapterMismatchError(`${dir} has no adapter_model.safetensors: not a PEFT adapter directory`);
  }
  if (!fs.existsSync(config)) throw new AdapterMismatchError(`${dir} has no adapter_config.json beside the weights: a PEFT adapter needs both`);
  return { dir, config, weights };
}

/** Whether `p` is (or is inside) a PEFT adapter directory rather than a GGUF file. */
export function looksLikePeft(p: string): boolean {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return false;
  if (st.isDirectory()) return true;
  return p.endsWith(".safetensors");
}

/** Reads a PEFT LoRA directory, checks it against the base, and brings it into llama.cpp's layout. */
export function readPeftAdapter(
  p: string,
  base: ModelConfig,
  baseIdentity: { hfRepo: string | null; name: string | null } = { hfRepo: null, name: null },
): PortableAdapter {
  const files = peftFiles(p);
  let rawConfig: unknown;
  try {
    rawConfig = JSON.parse(fs.readFileSync(files.config, "utf8"));
  } catch (e) {
    throw new AdapterMismatchError(`${files.config} is not valid JSON (${(e as Error).message.split("\n")[0]})`);
  }
  let cfg: ReturnType<typeof readPeftConfig>;
  try {
    cfg = readPeftConfig(rawConfig);
  } catch (e) {
    throw new AdapterMismatchError((e as Error).message);
  }
  let st: SafetensorsFile;
  try {
    st = readSafetensors(files.weights);
  } catch (e) {
    if (e instanceof SafetensorsError) throw new AdapterMismatchError(`${path.basename(files.weights)} is damaged: ${e.problem}`);
    throw e;
  }
  const halves = new Map<
    string,
    { layer: number; target: LinearName; a?: { v: Float32Array; shape: number[]; name: string }; b?: { v: Float32Array; shape: number[]; name: string } }
  >();
  const dtypes = new Set<string>();
  for (const t of st.tensors) {
    const parsed = parsePeftTensorName(t.name);
    if (!parsed) throw new AdapterMismatchError(unusablePeftTensor(t.name));
    let v: Float32Array;
    try {
      v = tensorF32(st, t);
    } catch (e) {
      throw new AdapterMismatchError((e as Error).message);
    }
    dtypes.add(t.dtype);
    const key = `${parsed.layer}:${parsed.target}`;
    const h = halves.get(key) ?? { layer: parsed.layer, target: parsed.target };
    if (h[parsed.half === "A" ? "a" : "b"]) throw new AdapterMismatchError(`${t.name}: a second lora_${parsed.half} for ${where(parsed.layer, parsed.target)}`);
    if (parsed.half === "A") h.a = { v, shape: t.shape, name: t.name };
    else h.b = { v, shape: t.shape, name: t.name };
    halves.set(key, h);
  }
  const { rank, pairs } = checkPairs(halves, base);
  if (rank !== cfg.rank) throw new AdapterMismatchError(`adapter_config.json says r = ${cfg.rank}, but the tensors have rank ${rank}`);
  // llama.cpp's scale is alpha / rank; PEFT's lora_alpha / r, or lora_alpha / √r with rsLoRA.
  const alpha = cfg.rslora ? cfg.alpha * Math.sqrt(rank) : cfg.alpha;
  for (const pr of pairs) {
    if (isRopePermuted(base.arch, pr.target)) {
      const [, nOut] = linearShape(base, pr.target);
      pr.b = permuteRowsHfToGguf(pr.b, nOut, rank, pr.target === "attn_q" ? base.nHead : base.nHeadKv);
    }
  }
  const warnings: string[] = [];
  const layers = new Set(pairs.map((x) => x.layer));
  if (layers.size < base.nLayer) warnings.push(`the adapter adapts ${layers.size} of the served model's ${base.nLayer} layers`);
  if (cfg.baseModel && (baseIdentity.hfRepo || baseIdentity.name)) {
    const norm = (s: string) =>
      s
        .toLowerCase()
        .replace(/^.*\//, "")
        .replace(/[^a-z0-9.]/g, "");
    const ours = [baseIdentity.hfRepo, baseIdentity.name].filter((x): x is string => !!x).map(norm);
    if (!ours.includes(norm(cfg.baseModel))) {
      warnings.push(
        `adapter_config.json names the base '${cfg.baseModel}'; the served model is '${baseIdentity.hfRepo ?? baseIdentity.name}' (the shapes match; make sure it was trained on this model)`,
      );
    }
  }
  return { arch: base.arch, rank, alpha, pairs, source: { format: "peft", path: files.dir, baseModel: cfg.baseModel, dtypes: [...dtypes] }, warnings };
}

function unusablePeftTensor(name: string): string {
  if (/lora_embedding_[AB]|embed_tokens/.test(name))
    return `${name}: the adapter changes the token embeddings (often after adding tokens), which the app cannot import`;
  if (/lm_head/.test(name)) return `${name}: the adapter changes the output layer (lm_head), which the app cannot import`;
  if (/lora_magnitude_vector/.test(name)) return `${name}: a DoRA adapter, which llama.cpp cannot apply`;
  if (/\.lora_[AB]\.bias$/.test(name) || /\.bias$/.test(name)) return `${name}: the adapter trains biases, which a llama.cpp LoRA cannot carry`;
  if (/modules_to_save|original_module/.test(name)) return `${name}: the adapter also trains whole modules (modules_to_save), which a LoRA file cannot carry`;
  return `${name} is not a LoRA tensor of a llama/qwen layer the app adapts (model.layers.N.self_attn.{q,k,v,o}_proj or mlp.{gate,up,down}_proj, lora_A/lora_B)`;
}

/** Reads `p` (a llama.cpp LoRA GGUF, or a PEFT directory / safetensors file) against the base at `basePath`. */
export function readAdapterForBase(p: string, basePath: string): PortableAdapter {
  const { config, file } = readBaseConfig(basePath);
  if (looksLikePeft(p)) return readPeftAdapter(p, config, baseIdentity(file));
  if (!fs.existsSync(p)) throw new AdapterMismatchError(`${p}: no such file or directory`);
  return readGgufAdapter(p, config);
}

/** What the base GGUF says it is (for messages and PEFT's base_model_name_or_path). */
export function baseIdentity(file: GgufFile): { hfRepo: string | null; name: string | null } {
  return { hfRepo: hfRepoFromMetadata((k) => metaString(file, k)), name: metaString(file, "general.name") ?? null };
}

/** Writes the adapter as a llama.cpp LoRA GGUF (F32), atomically. */
export function writeGgufAdapter(file: string, adapter: Pick<PortableAdapter, "arch" | "alpha" | "rank" | "pairs">, name = "clawrl-lora"): void {
  const metadata: Array<[string, GgufMetaValue]> = [
    ["general.architecture", { type: GgufValueType.STRING, value: adapter.arch }],
    ["general.type", { type: GgufValueType.STRING, value: "adapter" }],
    ["general.name", { type: GgufValueType.STRING, value: name }],
    ["adapter.type", { type: GgufValueType.STRING, value: "lora" }],
    ["adapter.lora.alpha", { type: GgufValueType.FLOAT32, value: adapter.alpha }],
  ];
  const tensors = sortPairs([...adapter.pairs]).flatMap((p) => {
    const key = `blk.${p.layer}.${p.target}.weight`;
    const nIn = p.a.length / adapter.rank;
    const nOut = p.b.length / adapter.rank;
    return [
      { name: `${key}.lora_a`, dims: [nIn, adapter.rank], type: GgmlType.F32, data: f32Bytes(p.a) },
      { name: `${key}.lora_b`, dims: [adapter.rank, nOut], type: GgmlType.F32, data: f32Bytes(p.b) },
    ];
  });
  writeGguf(file, { metadata, tensors });
}

/** The PEFT tensors of an adapter (B of llama's q/k un-permuted back to HF's layout). */
export function peftTensors(
  adapter: Pick<PortableAdapter, "rank" | "pairs">,
  base: ModelConfig,
): Array<{ name: string; shape: number[]; values: Float32Array }> {
  const out: Array<{ name: string; shape: number[]; values: Float32Array }> = [];
  for (const p of adapter.pairs) {
    const [nIn, nOut] = linearShape(base, p.target);
    const b = isRopePermuted(base.arch, p.target) ? permuteRowsGgufToHf(p.b, nOut, adapter.rank, p.target === "attn_q" ? base.nHead : base.nHeadKv) : p.b;
    out.push({ name: peftTensorName(p.layer, p.target, "A"), shape: [adapter.rank, nIn], values: p.a });
    out.push({ name: peftTensorName(p.layer, p.target, "B"), shape: [nOut, adapter.rank], values: b });
  }
  return out;
}

/**
 * Writes a PEFT adapter directory: adapter_model.safetensors (F32, PEFT's names and shapes) and
 * adapter_config.json. `baseModel`: base_model_name_or_path (null when unknown).
 */
export function writePeftAdapter(
  dir: string,
  adapter: Pick<PortableAdapter, "rank" | "alpha" | "pairs">,
  base: ModelConfig,
  baseModel: string | null,
): { files: string[]; config: ReturnType<typeof peftConfig> } {
  fs.mkdirSync(dir, { recursive: true });
  const weights = path.join(dir, "adapter_model.safetensors");
  const configFile = path.join(dir, "adapter_config.json");
  writeSafetensors(weights, peftTensors(adapter, base), { format: "pt" });
  const config = peftConfig({ rank: adapter.rank, alpha: adapter.alpha, nLayer: base.nLayer, pairs: adapter.pairs, baseModel });
  writeFileAtomicSync(configFile, `${JSON.stringify(config, null, 2)}\n`, 0o644);
  return { files: [weights, configFile], config };
}
