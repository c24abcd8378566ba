/**
 * LoRA adapters in llama.cpp's GGUF format, loadable by llama.cpp / node-llama-cpp
 * (`createContext({lora: {adapters: [{filePath}]}})`).
 *
 * Metadata: general.architecture = the base's, general.type = "adapter", adapter.type = "lora",
 * adapter.lora.alpha (f32). Tensors, F32, per adapted base tensor `blk.N.<name>.weight`:
 *   `.lora_a` with ggml ne = [in, rank]  (row-major [rank, in]: our A [in, rank] transposed)
 *   `.lora_b` with ggml ne = [rank, out] (row-major [out, rank]: our B [rank, out] transposed)
 * llama.cpp computes y += (user_scale·alpha/rank)·B·(A·x) with rank = ne[0] of lora_b.
 */
import * as tf from "@tensorflow/tfjs-core";
import { metaArch, metaNumber, metaString, readGguf, readTensorF32, type GgufFile } from "../../models/gguf/reader.js";
import { GgmlType, GgufError, GgufValueType, type GgufMetaValue } from "../../models/gguf/types.js";
import { f32Bytes, writeGguf, type GgufTensorSpec } from "../../models/gguf/writer.js";
import type { BaseModel } from "../model/base-model.js";
import { LINEAR_NAMES, linearShape } from "../model/weights.js";
import { loraKey, type LoraPair, type LoraParams, type LoraTarget } from "./params.js";
import { variableFrom } from "../model/variable.js";

/** Writes the adapter atomically (temp name, fsync, rename). */
export async function writeLoraAdapter(path: string, model: BaseModel, lora: LoraParams): Promise<void> {
  const metadata: Array<[string, GgufMetaValue]> = [
    ["general.architecture", { type: GgufValueType.STRING, value: model.arch }],
    ["general.type", { type: GgufValueType.STRING, value: "adapter" }],
    ["general.name", { type: GgufValueType.STRING, value: "clawrl-lora" }],
    ["adapter.type", { type: GgufValueType.STRING, value: "lora" }],
    ["adapter.lora.alpha", { type: GgufValueType.FLOAT32, value: lora.alpha }],
  ];
  const tensors: GgufTensorSpec[] = [];
  // Stable order: layer, then target (the order createLora made them).
  for (const [key, pair] of lora.pairs) {
    const [nIn, rank] = pair.a.shape;
    const nOut = pair.b.shape[1];
    const [ta, tb] = tf.tidy(() => [tf.transpose(pair.a), tf.transpose(pair.b)]);
    const [aT, bT] = (await Promise.all([ta.data(), tb.data()])) as Float32Array[];
    tf.dispose([ta, tb]);
    tensors.push({ name: `${key}.lora_a`, dims: [nIn, rank], type: GgmlType.F32, data: f32Bytes(aT) });
    tensors.push({ name: `${key}.lora_b`, dims: [rank, nOut], type: GgmlType.F32, data: f32Bytes(bT) });
  }
  writeGguf(path, { metadata, tensors });
}

const TENSOR_RE = /^blk\.(\d+)\.([a-z_]+)\.weight\.lora_([ab])$/;

/**
 * Reads an adapter for `model` (to resume training). Refuses, with a message naming the file
 * and the problem: non-adapter files, another architecture, tensors the trainer does not adapt,
 * missing halves, wrong shapes, mixed ranks.
 */
export function readLoraAdapter(path: string, model: BaseModel): LoraParams {
  const file = readGguf(path);
  const fail = (problem: string): never => {
    throw new GgufError(path, problem);
  };
  const type = metaString(file, "general.type");
  if (type !== "adapter" || metaString(file, "adapter.type") !== "lora") {
    fail(`not a LoRA adapter (general.type=${type ?? "absent"}, adapter.type=${metaString(file, "adapter.type") ?? "absent"})`);
  }
  const arch = metaArch(file);
  if (arch !== model.arch) fail(`adapter is for architecture '${arch ?? "absent"}', the base model is '${model.arch}'`);
  const alpha = metaNumber(file, "adapter.lora.alpha") ?? 0;

  const halves = collectHalves(file, model, fail);
  if (halves.size === 0) fail("adapter has no LoRA tensors");
  let rank = 0;
  const targets = new Set<LoraTarget>();
  for (const [key, h] of halves) {
    if (!h.a || !h.b) fail(`tensor '${key}.lora_${h.a ? "b" : "a"}' is missing`);
    const { target } = h;
    const [nIn, nOut] = linearShape(model.config, target);
    const r = h.a!.dims[1];
    const shapeOk = h.a!.dims.length === 2 && h.b!.dims.length === 2 && h.a!.dims[0] === nIn && h.b!.dims[0] === r && h.b!.dims[1] === nOut;
    if (!shapeOk) {
      fail(`'${key}' has lora_a [${h.a!.dims.join(", ")}] and lora_b [${h.b!.dims.join(", ")}]; the base layer needs [${nIn}, rank] and [rank, ${nOut}]`);
    }
    if (rank !== 0 && r !== rank) fail(`'${key}' has rank ${r}, other tensors have rank ${rank}`);
    rank = r;
    targets.add(target);
  }
  // Alpha 0 means "no alpha" in llama.cpp (scale = user scale); keep that meaning with alpha = rank.
  const effAlpha = alpha > 0 ? alpha : rank;
  const pairs = new Map<string, LoraPair>();
  const made: tf.Variable<tf.Rank.R2>[] = [];
  try {
    const ordered = [...halves.values()].sort((x, y) => x.layer - y.layer || LINEAR_NAMES.indexOf(x.target) - LINEAR_NAMES.indexOf(y.target));
    for (const h of ordered) {
      const key = loraKey(h.layer, h.target);
      const [nIn, nOut] = linearShape(model.config, h.target);
      const a = variableFrom(
        tf.tidy(() => tf.transpose<tf.Tensor2D>(tf.tensor2d(readTensorF32(file, h.a!), [rank, nIn]))),
        true,
      );
      made.push(a);
      const b = variableFrom(
        tf.tidy(() => tf.transpose<tf.Tensor2D>(tf.tensor2d(readTensorF32(file, h.b!), [nOut, rank]))),
        true,
      );
      made.push(b);
      pairs.set(key, { a, b });
    }
  } catch (e) {
    for (const v of made) v.dispose();
    throw e;
  }
  const targetList = LINEAR_NAMES.filter((t) => targets.has(t));
  return { rank, alpha: effAlpha, scale: effAlpha / rank, targets: targetList, pairs };
}

interface Halves {
  layer: number;
  target: LoraTarget;
  a?: GgufFile["tensors"][number];
  b?: GgufFile["tensors"][number];
}

function collectHalves(file: GgufFile, model: BaseModel, fail: (p: string) => never): Map<string, Halves> {
  const halves = new Map<string, Halves>();
  for (const t of file.tensors) {
    const m = TENSOR_RE.exec(t.name);
    if (!m) fail(`tensor '${t.name}' is not a LoRA tensor the trainer can adapt (only blk.N.{${LINEAR_NAMES.join(",")}}.weight)`);
    const layer = Number(m[1]);
    const target = m[2] as LoraTarget;
    if (!(LINEAR_NAMES as readonly string[]).includes(target)) fail(`tensor '${t.name}' adapts '${target}', which the trainer does not adapt`);
    if (layer >= model.config.nLayer) fail(`tensor '${t.name}' is for layer ${layer}; the base model has ${model.config.nLayer} layers`);
    const key = loraKey(layer, target);
    const h = halves.get(key) ?? { layer, target };
    if (m[3] === "a") h.a = t;
    else h.b = t;
    halves.set(key, h);
  }
  return halves;
}
