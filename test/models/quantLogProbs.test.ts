/**
 * Quantized tiny models through llama.cpp: the log-probs node-llama-cpp computes for a fixed
 * token sequence stay close to the unquantized model's, and closer still to an F32 "twin"
 * holding the weights our dequantizer reads back (so llama.cpp decodes our blocks to what we
 * meant). A model with other weights (another seed) is the yardstick for "far".
 *
 * Tolerances, in nats per token (26 tokens, vocab 485, log-probs around -8):
 * - f16: weight error 2^-11 relative → differences ~0.005; bound 0.03 max.
 * - q8_0: weights off by ~0.5% rms, and llama.cpp's CPU kernels also quantize activations to
 *   Q8_0 (another ~0.5%); with logits of std ~2 that moves log-probs by a few hundredths
 *   (measured: mean 0.04, max 0.11). Bound: mean < 0.1, max < 0.3. Another seed: mean > 1.
 * - q4_k: weights off by ~7% rms → mean ~0.25 vs the f16 reference; bound mean < 0.6. Against
 *   its twin only activation quantization remains (measured mean ~0.04): bound mean < 0.12,
 *   and at most half the distance to the reference. A scale/min packing error would put the
 *   twin as far away as another seed.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { getLlama, type ControlledEvaluateInputItem, type Llama, type Token } from "node-llama-cpp";
import { TINY_ARCHS } from "../../models/tiny/generate.js";
import { readGguf, readTensorF32 } from "../../models/gguf/reader.js";
import { GgmlType, GgufValueType, type GgufMetaValue } from "../../models/gguf/types.js";
import { f32Bytes, writeGguf } from "../../models/gguf/writer.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

const TEXT = "The assistant reads the question and answers: it is sunny in Paris, 21 degrees. Thank you!";
const dir = tempDir("clawrl-quant-lp-");
let llama: Llama;

before(async () => {
  llama = await getLlama({ gpu: false });
});
after(async () => {
  await llama?.dispose();
});

/** Token ids of TEXT under the tiny vocabulary (the same in every tiny model). */
async function textTokens(file: string): Promise<Token[]> {
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  try {
    return model.tokenize(TEXT);
  } finally {
    await model.dispose();
  }
}

/** log p(tokens[i+1] | tokens[..i]) from llama.cpp's logits, for i = 0..n-2. */
async function logProbs(file: string, tokens: Token[]): Promise<number[]> {
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  try {
    const ctx = await model.createContext({ contextSize: 128, threads: 1, flashAttention: false });
    try {
      const items: ControlledEvaluateInputItem[] = tokens.map((t, i) => (i < tokens.length - 1 ? [t, { generateNext: { logits: true } }] : t));
      const out = await ctx.getSequence().controlledEvaluate(items);
      const lp: number[] = [];
      for (let i = 0; i < tokens.length - 1; i++) {
        const logits = out[i]?.next?.logits;
        assert.ok(logits, `no logits at ${i}`);
        let max = -Infinity;
        for (const v of logits.values()) max = Math.max(max, v);
        let sum = 0;
        for (const v of logits.values()) sum += Math.exp(v - max);
        lp.push(logits.get(tokens[i + 1])! - max - Math.log(sum));
      }
      return lp;
    } finally {
      await ctx.dispose();
    }
  } finally {
    await model.dispose();
  }
}

/** The same model with every tensor dequantized (by models/gguf/dequant.ts) and stored as F32. */
function f32Twin(file: string): string {
  const g = readGguf(file);
  const out = path.join(dir, `twin-${path.basename(file)}`);
  const metadata = [...g.metadata].map(([k, v]): [string, GgufMetaValue] =>
    k === "general.file_type" ? [k, { type: GgufValueType.UINT32, value: 0 }] : [k, v],
  );
  writeGguf(out, { metadata, tensors: g.tensors.map((t) => ({ name: t.name, dims: t.dims, type: GgmlType.F32, data: f32Bytes(readTensorF32(g, t)) })) });
  return out;
}

function distance(a: number[], b: number[]): { mean: number; max: number } {
  assert.equal(a.length, b.length);
  let sum = 0,
    max = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    sum += d;
    max = Math.max(max, d);
  }
  return { mean: sum / a.length, max };
}

describe("quantized tiny models: llama.cpp log-probs", () => {
  for (const arch of TINY_ARCHS) {
    it(`${arch}: f16 and q8_0 stay close to f32`, async () => {
      const f32 = await tinyModel({ arch });
      const tokens = await textTokens(f32);
      assert.ok(tokens.length >= 20);
      const ref = await logProbs(f32, tokens);
      const mean = ref.reduce((a, b) => a + b) / ref.length;
      assert.ok(mean > -12 && mean < -2, `mean log-prob ${mean}: logits degenerate`);

      const other = distance(ref, await logProbs(await tinyModel({ arch, seed: 2 }), tokens));
      assert.ok(other.mean > 1, `another seed is only ${other.mean} away`);

      const f16 = distance(ref, await logProbs(await tinyModel({ arch, type: "f16" }), tokens));
      assert.ok(f16.max < 0.03, `f16: ${JSON.stringify(f16)}`);

      const q8 = distance(ref, await logProbs(await tinyModel({ arch, type: "q8_0" }), tokens));
      assert.ok(q8.mean < 0.1 && q8.max < 0.3, `q8_0: ${JSON.stringify(q8)}`);
    });

    it(`${arch}: q4_k stays close to f16 and closer to its dequantized twin`, async () => {
      const q4File = await tinyModel({ arch, type: "q4_k" });
      const tokens = await textTokens(q4File);
      const ref = await logProbs(await tinyModel({ arch, type: "f16", dim: 256 }), tokens);
      const q4 = await logProbs(q4File, tokens);
      const toRef = distance(ref, q4);
      assert.ok(toRef.mean < 0.6, `q4_k vs f16: ${JSON.stringify(toRef)}`);
      const other = distance(ref, await logProbs(await tinyModel({ arch, type: "f16", dim: 256, seed: 2 }), tokens));
      assert.ok(other.mean > 1, `another seed is only ${other.mean} away`);
      const toTwin = distance(q4, await logProbs(f32Twin(q4File), tokens));
      assert.ok(toTwin.mean < 0.12 && toTwin.mean < toRef.mean / 2, `q4_k vs twin ${JSON.stringify(toTwin)}, vs f16 ${JSON.stringify(toRef)}`);
    });
  }
});
