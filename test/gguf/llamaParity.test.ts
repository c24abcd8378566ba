/**
 * Dequantization parity with llama.cpp itself (node-llama-cpp, CPU). A one-layer llama model
 * whose layers add nothing (zero attention/FFN output weights) and whose token t embeds as the
 * one-hot vector e_(t mod 256) has, after the final RMSNorm (weight 1/16, so the normalised
 * vector is exactly e_j), logits[v] = W_out[v, j]. With `output.weight` stored in each quant
 * type, llama.cpp's logits are a column of its own dequantization, which must equal ours.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, describe, it } from "node:test";
import { getLlama, type ControlledEvaluateInputItem, type Llama, type Token } from "node-llama-cpp";
import { readGguf, readTensorF32 } from "../../models/gguf/reader.js";
import { GGML_TYPE_TRAITS, GgmlType, GgufValueType, type GgufMetaValue } from "../../models/gguf/types.js";
import { f32Bytes, writeGguf, type GgufTensorSpec } from "../../models/gguf/writer.js";
import { storiesModelPath, testCacheDir } from "../helpers/cli.js";

const D = 256; // a multiple of the K-quant super-block
const V = 512; // stories260K's vocabulary, whose tokenizer we borrow
const FF = 256;

/** Deterministic random block bytes. */
function randomBytes(len: number, seed: number): Uint8Array {
  const b = new Uint8Array(len);
  let s = seed >>> 0;
  for (let i = 0; i < len; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    b[i] = s >>> 24;
  }
  return b;
}

/** Keeps random data finite: f16 scales set to ~0.1, float weights given a modest exponent. */
function tame(type: GgmlType, b: Uint8Array): Uint8Array {
  const size = GGML_TYPE_TRAITS[type]!.typeSize;
  const scale = (o: number) => {
    b[o] = 0x66;
    b[o + 1] = 0x2e;
  };
  if (type === GgmlType.F16) for (let i = 1; i < b.length; i += 2) b[i] = (b[i] & 0x83) | 0x30;
  else if (type === GgmlType.BF16) for (let i = 1; i < b.length; i += 2) b[i] = (b[i] & 0x80) | 0x3e;
  else if (type === GgmlType.Q6_K) for (let o = 0; o < b.length; o += size) scale(o + 208);
  else if (type === GgmlType.Q3_K) for (let o = 0; o < b.length; o += size) scale(o + 108);
  else if (type === GgmlType.Q2_K) {
    for (let o = 0; o < b.length; o += size) {
      scale(o + 80);
      scale(o + 82);
    }
  } else {
    const hasMin = type === GgmlType.Q4_1 || type === GgmlType.Q5_1 || type === GgmlType.Q4_K || type === GgmlType.Q5_K;
    for (let o = 0; o < b.length; o += size) {
      scale(o);
      if (hasMin) scale(o + 2);
    }
  }
  return b;
}

function probeModel(file: string, type: GgmlType, tokenizer: Array<[string, GgufMetaValue]>): void {
  const u32 = (value: number): GgufMetaValue => ({ type: GgufValueType.UINT32, value });
  const zeros = (n: number) => f32Bytes(new Float32Array(n));
  const filled = (n: number, v: number) => f32Bytes(new Float32Array(n).fill(v));
  const embd = new Float32Array(D * V);
  for (let t = 0; t < V; t++) embd[t * D + (t % D)] = 1;
  const t = GGML_TYPE_TRAITS[type]!;
  const f32 = (name: string, dims: number[], data: Uint8Array): GgufTensorSpec => ({ name, dims, type: GgmlType.F32, data });
  writeGguf(file, {
    metadata: [
      ...tokenizer,
      ["general.architecture", { type: GgufValueType.STRING, value: "llama" }],
      ["llama.context_length", u32(256)],
      ["llama.embedding_length", u32(D)],
      ["llama.block_count", u32(1)],
      ["llama.feed_forward_length", u32(FF)],
      ["llama.rope.dimension_count", u32(64)],
      ["llama.attention.head_count", u32(4)],
      ["llama.attention.head_count_kv", u32(4)],
      // Tiny eps: the RMSNorm of e_j·1 is then e_j to f32 precision.
      ["llama.attention.layer_norm_rms_epsilon", { type: GgufValueType.FLOAT32, value: 1e-12 }],
    ],
    tensors: [
      f32("token_embd.weight", [D, V], f32Bytes(embd)),
      f32("output_norm.weight", [D], filled(D, 1 / 16)),
      { name: "output.weight", dims: [D, V], type, data: tame(type, randomBytes(((D * V) / t.blockSize) * t.typeSize, 1000 + type)) },
      f32("blk.0.attn_norm.weight", [D], filled(D, 1)),
      f32("blk.0.attn_q.weight", [D, D], zeros(D * D)),
      f32("blk.0.attn_k.weight", [D, D], zeros(D * D)),
      f32("blk.0.attn_v.weight", [D, D], zeros(D * D)),
      f32("blk.0.attn_output.weight", [D, D], zeros(D * D)),
      f32("blk.0.ffn_norm.weight", [D], filled(D, 1)),
      f32("blk.0.ffn_gate.weight", [D, FF], zeros(D * FF)),
      f32("blk.0.ffn_down.weight", [FF, D], zeros(D * FF)),
      f32("blk.0.ffn_up.weight", [D, FF], zeros(D * FF)),
    ],
  });
}

const stories = storiesModelPath();

describe("dequantization matches llama.cpp", () => {
  let llama: Llama | undefined;
  after(async () => {
    await llama?.dispose();
  });

  const types = [
    GgmlType.F16,
    GgmlType.BF16,
    GgmlType.Q8_0,
    GgmlType.Q4_0,
    GgmlType.Q4_1,
    GgmlType.Q5_0,
    GgmlType.Q5_1,
    GgmlType.Q2_K,
    GgmlType.Q3_K,
    GgmlType.Q4_K,
    GgmlType.Q5_K,
    GgmlType.Q6_K,
    GgmlType.IQ4_NL,
    GgmlType.IQ4_XS,
  ];
  for (const type of types) {
    const name = GGML_TYPE_TRAITS[type]!.name;
    it(`${name}: llama.cpp logits equal our dequantized output weights`, async () => {
      llama ??= await getLlama({ gpu: false, logLevel: "error" as never, build: "never" });
      const tokenizer = [...readGguf(stories).metadata].filter(([k]) => k.startsWith("tokenizer."));
      fs.mkdirSync(testCacheDir, { recursive: true });
      const file = path.join(testCacheDir, `dequant-parity-${name}.gguf`);
      probeModel(file, type, tokenizer);
      const W = readTensorF32(readGguf(file), "output.weight");

      const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
      try {
        const ctx = await model.createContext({ contextSize: 256, batchSize: 64 });
        const seq = ctx.getSequence();
        // 40 tokens covering 40 distinct columns j of W.
        const tokens = Array.from({ length: 40 }, (_, i) => (i * 53 + 7) % V);
        const items: ControlledEvaluateInputItem[] = tokens.map((t) => [t as Token, { generateNext: { logits: true } }]);
        const out = await seq.controlledEvaluate(items);
        let checked = 0;
        let nonZero = 0;
        for (let i = 0; i < tokens.length; i++) {
          const j = tokens[i] % D;
          const logits = out[i]?.next.logits;
          assert.ok(logits, `no logits at position ${i}`);
          for (let v = 0; v < V; v++) {
            const w = W[v * D + j];
            const got = logits.get(v as Token);
            assert.ok(got !== undefined, `no logit for token ${v}`);
            // llama.cpp quantizes the activation (Q8_0 keeps an f16 scale: ~2^-11 relative);
            // a layout mistake would be off by the size of the weights themselves.
            assert.ok(Math.abs(got - w) <= Math.abs(w) * 2 ** -10 + 1e-4, `${name} W[${v}, ${j}]: llama.cpp ${got}, ours ${w}`);
            checked++;
            if (w !== 0) nonZero++;
          }
        }
        assert.equal(checked, 40 * V);
        assert.ok(nonZero > checked / 2, "the probe weights are mostly non-zero");
        await ctx.dispose();
      } finally {
        await model.dispose();
      }
    });
  }
});
