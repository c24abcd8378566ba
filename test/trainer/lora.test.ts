/**
 * LoRA parameters and adapter files: fresh adapters are zero in B, the written file has
 * llama.cpp's layout, reading it back round-trips, state snapshots restore values, and
 * mismatched or corrupt adapters are refused with a clear message.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { readGguf, metaString, metaNumber, readTensorF32, findTensor } from "../../models/gguf/reader.js";
import { GgmlType, GgufValueType, type GgufMetaValue } from "../../models/gguf/types.js";
import { f32Bytes, writeGguf, type GgufTensorSpec } from "../../models/gguf/writer.js";
import { loadBaseModel, type BaseModel } from "../../trainer/model/index.js";
import {
  createLora,
  disposeLora,
  loraState,
  loraVariables,
  readLoraAdapter,
  setLoraState,
  writeLoraAdapter,
  type LoraParams,
} from "../../trainer/lora/index.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";

const storiesPath = storiesModelPath();
let model: BaseModel;
let lora: LoraParams;
let dir: string;

before(async () => {
  await initBackend();
  model = await loadBaseModel(storiesPath);
  lora = createLora(model, { rank: 4, alpha: 8, seed: 5, targets: ["attn_q", "attn_v", "ffn_down"] });
  tf.tidy(() => {
    for (const [i, v] of loraVariables(lora).entries()) if (i % 2 === 1) v.assign(tf.randomNormal(v.shape, 0, 0.1, "float32", i));
  });
  dir = tempDir();
});
after(() => {
  if (lora) disposeLora(lora);
  model?.dispose();
});

test("createLora: defaults rank 16 / alpha 32 on all seven linear layers, B = 0, A seeded", () => {
  const a = createLora(model, { seed: 1 });
  const b = createLora(model, { seed: 1 });
  assert.equal(a.rank, 16);
  assert.equal(a.alpha, 32);
  assert.equal(a.scale, 2);
  assert.equal(a.pairs.size, model.config.nLayer * 7);
  const q0 = a.pairs.get("blk.0.attn_q.weight")!;
  assert.deepEqual(q0.a.shape, [64, 16]);
  assert.deepEqual(q0.b.shape, [16, 64]);
  assert.deepEqual(a.pairs.get("blk.0.ffn_down.weight")!.a.shape, [172, 16]);
  assert.deepEqual(a.pairs.get("blk.0.attn_k.weight")!.b.shape, [16, 32], "GQA: K has n_head_kv·head_dim outputs");
  for (const p of a.pairs.values())
    assert.equal(
      tf.tidy(() => tf.max(tf.abs(p.b)).dataSync()[0]),
      0,
    );
  assert.deepEqual(q0.a.dataSync(), b.pairs.get("blk.0.attn_q.weight")!.a.dataSync(), "same seed, same A");
  assert.ok(tf.tidy(() => tf.max(tf.abs(q0.a)).dataSync()[0]) > 0);
  disposeLora(a);
  disposeLora(b);
  assert.throws(() => createLora(model, { targets: ["attn_norm"] }), /unknown LoRA target attn_norm/);
  assert.throws(() => createLora(model, { rank: 0 }), /rank must be a positive integer/);
});

test("writeLoraAdapter: llama.cpp metadata and tensor layout (lora_a ne=[in, rank], lora_b ne=[rank, out])", async () => {
  const file = path.join(dir, "a.gguf");
  await writeLoraAdapter(file, model, lora);
  const g = readGguf(file);
  assert.equal(metaString(g, "general.type"), "adapter");
  assert.equal(metaString(g, "adapter.type"), "lora");
  assert.equal(metaString(g, "general.architecture"), "llama");
  assert.equal(metaNumber(g, "adapter.lora.alpha"), 8);
  assert.equal(g.tensors.length, model.config.nLayer * 3 * 2);
  const ta = findTensor(g, "blk.2.ffn_down.weight.lora_a")!;
  const tb = findTensor(g, "blk.2.ffn_down.weight.lora_b")!;
  assert.deepEqual(ta.dims, [172, 4]);
  assert.deepEqual(tb.dims, [4, 64]);
  assert.equal(ta.type, GgmlType.F32);
  // Row-major [rank, in]: element (r, i) of the file is A[i][r].
  const p = lora.pairs.get("blk.2.ffn_down.weight")!;
  const A = p.a.arraySync();
  const fileA = readTensorF32(g, ta);
  assert.equal(fileA[1 * 172 + 5], Math.fround(A[5][1]));
  const B = p.b.arraySync();
  const fileB = readTensorF32(g, tb);
  assert.equal(fileB[7 * 4 + 3], Math.fround(B[3][7]));
  assert.deepEqual(
    fs.readdirSync(dir).filter((f) => f !== "a.gguf" && f.startsWith("a.gguf")),
    [],
    "no temp files left",
  );
});

test("readLoraAdapter round-trips values, rank, alpha and targets", async () => {
  const file = path.join(dir, "rt.gguf");
  await writeLoraAdapter(file, model, lora);
  const back = readLoraAdapter(file, model);
  assert.equal(back.rank, 4);
  assert.equal(back.alpha, 8);
  assert.deepEqual(back.targets, ["attn_q", "attn_v", "ffn_down"]);
  assert.deepEqual([...back.pairs.keys()], [...lora.pairs.keys()]);
  for (const [k, p] of lora.pairs) {
    assert.deepEqual(back.pairs.get(k)!.a.dataSync(), p.a.dataSync());
    assert.deepEqual(back.pairs.get(k)!.b.dataSync(), p.b.dataSync());
  }
  disposeLora(back);
});

test("an adapter made or read gives back every tensor and byte when disposed", async () => {
  // tf.variable(t) keeps t alive beside the variable: each adapter once left a copy behind.
  const file = path.join(dir, "memory.gguf");
  await writeLoraAdapter(file, model, lora);
  const before = tf.memory();
  for (const make of [() => createLora(model, { rank: 4, seed: 2 }), () => readLoraAdapter(file, model)]) {
    const made = make();
    assert.equal(tf.memory().numTensors, before.numTensors + 2 * made.pairs.size, "one tensor per A and B, nothing beside them");
    disposeLora(made);
    assert.equal(tf.memory().numTensors, before.numTensors);
    assert.equal(tf.memory().numBytes, before.numBytes);
  }
});

test("loraState / setLoraState restore the values; a mismatched state is refused", async () => {
  const state = await loraState(lora);
  const other = createLora(model, { rank: 4, alpha: 8, seed: 99, targets: ["attn_q", "attn_v", "ffn_down"] });
  setLoraState(other, state);
  for (const [k, p] of lora.pairs) assert.deepEqual(other.pairs.get(k)!.b.dataSync(), p.b.dataSync());
  const wrong = createLora(model, { rank: 4, alpha: 8, targets: ["attn_q"] });
  assert.throws(() => setLoraState(wrong, state), /does not match the adapter/);
  const n = tf.memory().numTensors;
  setLoraState(other, state);
  assert.equal(tf.memory().numTensors, n, "no tensors leak on restore");
  disposeLora(other);
  disposeLora(wrong);
});

function adapterFile(name: string, meta: Record<string, string | number>, tensors: Array<{ name: string; dims: number[] }>): string {
  const metadata: Array<[string, GgufMetaValue]> = Object.entries(meta).map(([k, v]) => [
    k,
    typeof v === "string" ? { type: GgufValueType.STRING, value: v } : { type: GgufValueType.FLOAT32, value: v },
  ]);
  const specs: GgufTensorSpec[] = tensors.map((t) => ({
    name: t.name,
    dims: t.dims,
    type: GgmlType.F32,
    data: f32Bytes(new Float32Array(t.dims.reduce((a, b) => a * b, 1))),
  }));
  const file = path.join(dir, name);
  writeGguf(file, { metadata, tensors: specs });
  return file;
}

const okMeta = { "general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": 8 };
const okTensors = [
  { name: "blk.0.attn_q.weight.lora_a", dims: [64, 4] },
  { name: "blk.0.attn_q.weight.lora_b", dims: [4, 64] },
];

test("corrupt or mismatched adapters are refused with a clear message", () => {
  const good = readLoraAdapter(adapterFile("ok.gguf", okMeta, okTensors), model);
  assert.equal(good.pairs.size, 1);
  disposeLora(good);
  const cases: Array<[string, string, RegExp]> = [
    [
      adapterFile("arch.gguf", { ...okMeta, "general.architecture": "qwen2" }, okTensors),
      "wrong architecture",
      /adapter is for architecture 'qwen2', the base model is 'llama'/,
    ],
    [adapterFile("notlora.gguf", { "general.architecture": "llama" }, okTensors), "not an adapter", /not a LoRA adapter/],
    [
      adapterFile("shape.gguf", okMeta, [okTensors[0], { name: "blk.0.attn_q.weight.lora_b", dims: [4, 32] }]),
      "wrong shape",
      /needs \[64, rank\] and \[rank, 64\]/,
    ],
    [adapterFile("half.gguf", okMeta, [okTensors[0]]), "missing half", /'blk\.0\.attn_q\.weight\.lora_b' is missing/],
    [
      adapterFile("layer.gguf", okMeta, [
        { name: "blk.9.attn_q.weight.lora_a", dims: [64, 4] },
        { name: "blk.9.attn_q.weight.lora_b", dims: [4, 64] },
      ]),
      "layer out of range",
      /layer 9; the base model has 5 layers/,
    ],
    [adapterFile("norm.gguf", okMeta, [{ name: "blk.0.attn_norm.weight.lora_a", dims: [64, 4] }]), "non-adaptable tensor", /adapts 'attn_norm'/],
  ];
  for (const [file, what, re] of cases) assert.throws(() => readLoraAdapter(file, model), re, what);
  const trunc = path.join(dir, "trunc.gguf");
  const bytes = fs.readFileSync(path.join(dir, "ok.gguf"));
  fs.writeFileSync(trunc, bytes.subarray(0, bytes.length - 100));
  assert.throws(() => readLoraAdapter(trunc, model), /trunc\.gguf: .*(truncated|past the end)/);
  assert.throws(() => readLoraAdapter(storiesPath, model), /not a LoRA adapter/);
});
