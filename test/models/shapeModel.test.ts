/**
 * Random-weight models with the real shapes of the catalog's models: the shape table against
 * the catalog, `--layers 1` files read back with the project's GGUF reader, and llama.cpp
 * (node-llama-cpp 3.22.1, CPU) loading them, tokenizing through the padded vocabulary, rendering
 * ChatML and evaluating to finite, non-degenerate logits over the full real vocabulary.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { after, before, describe, it } from "node:test";
import { getLlama, resolveChatWrapper, type Llama, type LlamaModel } from "node-llama-cpp";
import { loadCatalog } from "../../models/catalog.js";
import { encodeShapeModel, paddedVocab, type ShapeType } from "../../models/tiny/generate.js";
import { ensureShapeModel, shapeModelFileName } from "../../models/tiny/shapeCache.js";
import { findShape, llama3RopeFactors, MODEL_SHAPES, type RealShape } from "../../models/tiny/shapes.js";
import { archNumber, findTensor, metaArray, metaNumber, metaString, readGguf, readTensorF32, type GgufFile } from "../../models/gguf/reader.js";
import { dequantize } from "../../models/gguf/dequant.js";
import { GGML_TYPE_TRAITS, GgmlType } from "../../models/gguf/types.js";
import { testCacheDir } from "../helpers/cli.js";

/** Weights of a model with this shape, counting a tied output once. */
function parameterCount(s: RealShape): number {
  const q = s.heads * s.headDim;
  const kv = s.kvHeads * s.headDim;
  const perLayer = s.dim * (q + 2 * kv) + q * s.dim + 3 * s.dim * s.ffn + 2 * s.dim + (s.qkvBias ? q + 2 * kv : 0) + (s.qkNorm ? 2 * s.headDim : 0);
  return s.vocab * s.dim + s.layers * perLayer + s.dim + (s.tiedOutput ? 0 : s.vocab * s.dim);
}

describe("shape table", () => {
  it("has one shape per catalog model, with its architecture and context length", () => {
    const catalog = loadCatalog();
    for (const m of catalog) {
      const shapes = MODEL_SHAPES.filter((s) => s.catalogId === m.id);
      assert.equal(shapes.length, 1, `${m.id}: ${shapes.length} shapes`);
      const s = shapes[0];
      assert.equal(s.arch, m.architecture, m.id);
      assert.equal(s.contextLength, m.contextLength, m.id);
      assert.equal(findShape(m.id), s, "catalog id resolves to its shape");
      assert.equal(findShape(s.id), s);
    }
    for (const s of MODEL_SHAPES)
      assert.ok(
        catalog.some((m) => m.id === s.catalogId),
        `${s.id}: no catalog model ${s.catalogId}`,
      );
    assert.equal(new Set(MODEL_SHAPES.map((s) => s.id)).size, MODEL_SHAPES.length);
  });

  it("gives each model the parameter count the catalog states (within 1.5%)", () => {
    for (const m of loadCatalog()) {
      const s = findShape(m.id)!;
      const n = parameterCount(s);
      // Hugging Face's count for a tied model sometimes includes the output matrix (Qwen3-1.7B: 2.03B).
      const counts = [n, n + (s.tiedOutput ? s.vocab * s.dim : 0)];
      const closest = Math.min(...counts.map((c) => Math.abs(c - m.parameters) / m.parameters));
      assert.ok(closest < 0.015, `${s.id}: ${counts.map((c) => (c / 1e9).toFixed(3)).join(" or ")}B parameters, catalog ${m.parameters / 1e9}B`);
    }
  });

  it("is internally consistent", () => {
    for (const s of MODEL_SHAPES) {
      assert.equal(s.qkvBias, s.arch === "qwen2", s.id);
      assert.equal(s.qkNorm, s.arch === "qwen3", s.id);
      assert.ok(s.heads % s.kvHeads === 0, `${s.id}: GQA groups`);
      assert.ok(s.headDim % 2 === 0, `${s.id}: RoPE pairs`);
      for (const d of [s.dim, s.ffn, s.heads * s.headDim]) assert.ok(d % 32 === 0, `${s.id}: ${d} is not whole q8_0 blocks`);
      assert.equal(s.ropeScaling !== undefined, s.id.startsWith("llama-3.2"), s.id);
      assert.ok(s.tiedOutput, `${s.id}: all catalog models tie their output`);
    }
  });

  it("computes llama3 RoPE factors with the converter's bands", () => {
    // head 64, base 5e5: wavelength 2π·5e5^(i/32) is below 8192/4 for i <= 14 and above 8192 for i >= 18.
    const f = llama3RopeFactors(64, 500_000, { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 });
    assert.equal(f.length, 32);
    assert.deepEqual([...f.subarray(0, 15)], new Array(15).fill(1));
    assert.deepEqual([...f.subarray(18)], new Array(14).fill(32));
    for (let i = 15; i < 18; i++) assert.ok(f[i] > f[i - 1] && f[i] < 32, `factor ${i}: ${f[i]}`);
    // i = 16: wavelength 2π·5e5^0.5 = 4442.9, smooth = (8192/4442.9 - 1)/3 = 0.2813, factor = 1/((1-s)/32 + s) = 3.2923.
    assert.ok(Math.abs(f[16] - 3.2923) < 1e-3, `factor 16: ${f[16]}`);
  });
});

/** A `--layers 1` model per architecture (qwen2 in q4_k to exercise the q8_0 fallback), cached in .cache/test. */
const CASES: Array<{ shape: string; type: ShapeType }> = [
  { shape: "smollm2-135m", type: "q8_0" },
  { shape: "qwen2.5-0.5b", type: "q4_k" },
  { shape: "qwen3-0.6b", type: "q8_0" },
  { shape: "llama-3.2-1b", type: "q8_0" },
];
const fileOf = (c: { shape: string; type: ShapeType }) => ensureShapeModel(c.shape, c.type, { layers: 1, dir: testCacheDir });

/** `n` values of a tensor from element `from` (both whole blocks), dequantized: a 1 GB embedding is never read whole. */
function tensorValues(g: GgufFile, name: string, from: number, n: number): Float32Array {
  const t = findTensor(g, name)!;
  const { blockSize, typeSize } = GGML_TYPE_TRAITS[t.type]!;
  assert.ok(from % blockSize === 0 && n % blockSize === 0 && from + n <= t.nElements);
  const bytes = Buffer.alloc((n / blockSize) * typeSize);
  const fd = fs.openSync(g.path, "r");
  try {
    fs.readSync(fd, bytes, 0, bytes.length, g.tensorDataOffset + t.offset + (from / blockSize) * typeSize);
  } finally {
    fs.closeSync(fd);
  }
  return dequantize(t.type, bytes, n);
}

function std(v: Float32Array): number {
  let s = 0,
    ss = 0;
  for (const x of v) {
    s += x;
    ss += x * x;
  }
  const mean = s / v.length;
  return Math.sqrt(ss / v.length - mean * mean);
}

describe("shape model files", () => {
  for (const c of CASES) {
    it(`${c.shape} ${c.type} --layers 1: metadata and tensors read back as the table says`, () => {
      const s = findShape(c.shape)!;
      const g: GgufFile = readGguf(fileOf(c));
      assert.equal(metaString(g, "general.architecture"), s.arch);
      assert.equal(archNumber(g, "block_count"), 1);
      assert.equal(archNumber(g, "embedding_length"), s.dim);
      assert.equal(archNumber(g, "feed_forward_length"), s.ffn);
      assert.equal(archNumber(g, "attention.head_count"), s.heads);
      assert.equal(archNumber(g, "attention.head_count_kv"), s.kvHeads);
      assert.equal(archNumber(g, "attention.key_length"), s.headDim);
      assert.equal(archNumber(g, "attention.value_length"), s.headDim);
      assert.equal(archNumber(g, "rope.dimension_count"), s.headDim);
      assert.equal(archNumber(g, "rope.freq_base"), s.ropeBase);
      assert.equal(archNumber(g, "attention.layer_norm_rms_epsilon"), Math.fround(s.rmsEps));
      assert.equal(archNumber(g, "context_length"), s.contextLength);
      assert.equal(archNumber(g, "vocab_size"), s.vocab);
      const tokens = metaArray(g, "tokenizer.ggml.tokens") as string[];
      assert.equal(tokens.length, s.vocab);
      assert.equal(tokens[metaNumber(g, "tokenizer.ggml.eos_token_id")!], "<|im_end|>");
      assert.equal(tokens[s.vocab - 1], `[PAD${s.vocab - 1}]`);

      const q = s.heads * s.headDim;
      const kv = s.kvHeads * s.headDim;
      const q4kOk = (inDim: number) => (c.type === "q4_k" && inDim % 256 !== 0 ? GgmlType.Q8_0 : GgmlType[c.type.toUpperCase() as keyof typeof GgmlType]);
      const expected: Array<[string, number[], GgmlType]> = [
        ["token_embd.weight", [s.dim, s.vocab], q4kOk(s.dim)],
        ["blk.0.attn_norm.weight", [s.dim], GgmlType.F32],
        ["blk.0.attn_q.weight", [s.dim, q], q4kOk(s.dim)],
        ["blk.0.attn_k.weight", [s.dim, kv], q4kOk(s.dim)],
        ["blk.0.attn_v.weight", [s.dim, kv], q4kOk(s.dim)],
        ["blk.0.attn_output.weight", [q, s.dim], q4kOk(q)],
        ["blk.0.ffn_norm.weight", [s.dim], GgmlType.F32],
        ["blk.0.ffn_gate.weight", [s.dim, s.ffn], q4kOk(s.dim)],
        ["blk.0.ffn_up.weight", [s.dim, s.ffn], q4kOk(s.dim)],
        ["blk.0.ffn_down.weight", [s.ffn, s.dim], q4kOk(s.ffn)],
        ["output_norm.weight", [s.dim], GgmlType.F32],
      ];
      if (s.qkvBias)
        expected.push(["blk.0.attn_q.bias", [q], GgmlType.F32], ["blk.0.attn_k.bias", [kv], GgmlType.F32], ["blk.0.attn_v.bias", [kv], GgmlType.F32]);
      if (s.qkNorm) expected.push(["blk.0.attn_q_norm.weight", [s.headDim], GgmlType.F32], ["blk.0.attn_k_norm.weight", [s.headDim], GgmlType.F32]);
      if (s.ropeScaling) expected.push(["rope_freqs.weight", [s.headDim / 2], GgmlType.F32]);
      assert.deepEqual(g.tensors.map((t) => t.name).sort(), expected.map(([n]) => n).sort(), "tensor names (no output.weight: tied)");
      for (const [name, dims, type] of expected) {
        const t = findTensor(g, name)!;
        assert.deepEqual(t.dims, dims, name);
        assert.equal(GgmlType[t.type], GgmlType[type], name);
      }
      if (c.type === "q4_k") assert.equal(findTensor(g, "blk.0.ffn_down.weight")!.type, GgmlType.Q4_K, "q4_k where rows allow it");

      // Weight scales: std 1/sqrt(in) for the matrices, 2/sqrt(dim) for the tied embedding, norms around 1.
      const within = (got: number, want: number, what: string) => assert.ok(Math.abs(got / want - 1) < 0.1, `${what}: std ${got}, want ${want}`);
      const N = 1 << 18;
      within(std(tensorValues(g, "blk.0.attn_q.weight", 0, N)), 1 / Math.sqrt(s.dim), "attn_q");
      within(std(tensorValues(g, "blk.0.ffn_down.weight", 0, N)), 1 / Math.sqrt(s.ffn), "ffn_down");
      within(std(tensorValues(g, "token_embd.weight", 0, N)), 2 / Math.sqrt(s.dim), "token_embd");
      within(std(tensorValues(g, "token_embd.weight", s.dim * s.vocab - N, N)), 2 / Math.sqrt(s.dim), "token_embd's last rows (padding tokens)");
      const norm = readTensorF32(g, "output_norm.weight");
      assert.ok(Math.abs(norm.reduce((a, b) => a + b, 0) / norm.length - 1) < 0.02, "norm weights around 1");
      if (s.ropeScaling) assert.deepEqual([...readTensorF32(g, "rope_freqs.weight")], [...llama3RopeFactors(s.headDim, s.ropeBase, s.ropeScaling)]);
    });
  }

  it("the streamed file equals the in-memory encoding, the same options give the same bytes, another seed other weights", () => {
    const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
    const opts = { shape: "smollm2-135m", type: "q8_0" as const, layers: 1 };
    const streamed = fs.readFileSync(fileOf(opts));
    assert.equal(sha(encodeShapeModel(opts)), sha(streamed));
    const other = encodeShapeModel({ ...opts, seed: 2 });
    assert.equal(other.length, streamed.length);
    assert.notEqual(sha(other), sha(streamed));
  });

  it("ensureShapeModel names files by their options and reuses them", () => {
    assert.equal(shapeModelFileName("qwen3-1.7b", "q8_0"), "qwen3-1.7b-q8_0.gguf");
    assert.equal(shapeModelFileName("qwen2.5-0.5b-instruct", "q4_k", { layers: 2, contextLength: 4096, seed: 3 }), "qwen2.5-0.5b-q4_k-l2-c4096-s3.gguf");
    assert.equal(shapeModelFileName("qwen3-0.6b", "f16", { layers: 28, contextLength: 40960, seed: 1 }), "qwen3-0.6b-f16.gguf", "defaults add no suffix");
    const file = fileOf(CASES[0]);
    const mtime = fs.statSync(file).mtimeMs;
    assert.equal(fileOf(CASES[0]), file);
    assert.equal(fs.statSync(file).mtimeMs, mtime, "not regenerated");
    assert.throws(() => ensureShapeModel("gpt-5", "q8_0"), /shape must be one of smollm2-135m, .*llama-3.2-3b, got 'gpt-5'/);
    assert.throws(() => ensureShapeModel("qwen3-0.6b", "q8_0", { layers: 29 }), /layers must be an integer between 1 and 28/);
  });

  it("pads the tiny vocabulary with NORMAL [PAD<id>] tokens, specials where the tiny models have them", () => {
    const v = paddedVocab(49152);
    assert.equal(v.tokens.length, 49152);
    assert.equal(v.tokens[v.imEnd], "<|im_end|>");
    assert.equal(v.tokens[v.imStart], "<|im_start|>");
    assert.equal(v.tokens[v.imEnd + 1], `[PAD${v.imEnd + 1}]`);
    assert.equal(v.tokenTypes[v.imEnd + 1], 1);
    assert.equal(new Set(v.tokens).size, v.tokens.length, "tokens are unique");
  });
});

describe("shape models in node-llama-cpp", () => {
  let llama: Llama;
  before(async () => {
    llama = await getLlama({ gpu: false });
  });
  after(async () => {
    await llama?.dispose();
  });

  for (const c of CASES) {
    it(`${c.shape} ${c.type} --layers 1 loads, tokenizes, renders ChatML and evaluates to finite logits over ${findShape(c.shape)!.vocab} tokens`, async () => {
      const s = findShape(c.shape)!;
      const model: LlamaModel = await llama.loadModel({ modelPath: fileOf(c), gpuLayers: 0 });
      try {
        assert.equal(model.fileInfo.metadata.general.architecture, s.arch);
        assert.equal(model.trainContextSize, s.contextLength);
        const text = "Hello, world! The assistant answers: naïve café 😀 你好.";
        assert.equal(model.detokenize(model.tokenize(text)), text);
        const imEnd = model.tokenize("<|im_end|>", true);
        assert.equal(imEnd.length, 1);
        assert.equal(model.tokens.eos, imEnd[0]);
        const pad = s.vocab - 1;
        assert.equal(model.detokenize([pad as never]), `[PAD${pad}]`, "padding tokens detokenize to their text");

        const wrapper = resolveChatWrapper({
          fileInfo: model.fileInfo,
          tokenizer: model.tokenizer,
          bosString: model.tokens.bosString,
          filename: model.filename,
        });
        assert.ok(wrapper, "no chat wrapper");
        const prompt = wrapper.generateContextState({
          chatHistory: [
            { type: "system", text: "Be brief." },
            { type: "user", text: "Hi there" },
            { type: "model", response: [] },
          ],
        }).contextText;
        assert.equal(prompt.toString(), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n");

        const tokens = prompt.tokenize(model.tokenizer);
        const ctx = await model.createContext({ contextSize: 256, threads: 1 });
        try {
          const last = tokens.length - 1;
          const out = await ctx.getSequence().controlledEvaluate(tokens.map((t, i) => (i >= last - 1 ? [t, { generateNext: { logits: true } }] : t)));
          for (const i of [last - 1, last]) {
            const logits = out[i]?.next?.logits;
            assert.ok(logits, `no logits at ${i}`);
            assert.equal(logits.size, s.vocab);
            let max = -Infinity,
              sum = 0,
              sumSq = 0;
            for (const l of logits.values()) {
              assert.ok(Number.isFinite(l), `logit ${l}`);
              max = Math.max(max, l);
              sum += l;
              sumSq += l * l;
            }
            let z = 0;
            for (const l of logits.values()) z += Math.exp(l - max);
            const logZ = max + Math.log(z);
            assert.ok(Number.isFinite(logZ));
            const spread = Math.sqrt(sumSq / logits.size - (sum / logits.size) ** 2);
            assert.ok(spread > 0.5 && spread < 10, `logit std ${spread}: degenerate`);
            assert.ok(max - logZ < Math.log(0.9), `top probability ${Math.exp(max - logZ)}: one-hot`);
          }
        } finally {
          await ctx.dispose();
        }
      } finally {
        await model.dispose();
      }
    });
  }
});
