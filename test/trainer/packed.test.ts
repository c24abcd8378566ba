/**
 * Packed batches (issue 31, "bigger, fewer matMuls"): a batch's sequences are the rows of one
 * matrix with no padding, each attending to its own rows only with RoPE positions from 0. For a
 * batch of 3 sequences of 5, 17 and 9 tokens, the packed log-probs equal the padded grid's and
 * those of each sequence scored alone (1e-5); one trainSteps' LoRA gradients equal the padded
 * batch's with every block kept and with every block recomputed, and split into micro-batches
 * by real tokens they add up to the same sum. The same checks run with attention forced onto
 * the GPU backends' path (one batched product per step), whose default layout is the padded grid.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { setBatchedAttention } from "../../trainer/model/block.js";
import { loadBaseModel, tokenLogProbs, type BaseModel } from "../../trainer/model/index.js";
import { layoutTokens, packedLayout, paddedEquivalent, planBatch, setBatchLayout } from "../../trainer/model/logprobs.js";
import { createLora, disposeLora, loraVariables, type LoraParams } from "../../trainer/lora/params.js";
import { AdamW } from "../../trainer/optim/adamw.js";
import { loraParamRecord, microBatches, trainSteps, type TrainOptions } from "../../trainer/train/trainSteps.js";
import type { PreparedSample } from "../../trainer/train/tokenize.js";
import { tinyModel } from "../helpers/models.js";
import { assertGradientsClose } from "../helpers/gradients.js";

const LENS = [5, 17, 9];
const STARTS = [2, 10, 4];

before(async () => {
  await initBackend();
});
after(() => {
  setBatchLayout(undefined);
  setBatchedAttention(undefined);
});

function tokensFor(m: BaseModel): number[][] {
  return LENS.map((len, b) => Array.from({ length: len }, (_, i) => (i === 0 ? 1 : (i * 37 + b * 101 + 5) % m.config.nVocab)));
}

function randomLora(m: BaseModel, seed: number): LoraParams {
  const lora = createLora(m, { rank: 4, alpha: 8, seed });
  // Non-zero B so the adapter changes the outputs and A gets gradients too.
  tf.tidy(() => {
    for (const [i, v] of loraVariables(lora).entries()) if (i % 2 === 1) v.assign(tf.randomNormal(v.shape, 0, 0.05, "float32", seed + i));
  });
  return lora;
}

/** Log-probs and the best top-3 log-prob of the batch in a layout, [B, Tmax] each (the output layout is the same for both). */
async function scores(
  m: BaseModel,
  lora: LoraParams | null,
  tokens: number[][],
  starts: number[],
  layout: "packed" | "padded",
): Promise<[number[][], number[][]]> {
  setBatchLayout(layout);
  try {
    const r = tokenLogProbs(m, lora, { tokens, targetStart: starts }, { topK: 3 });
    const lp = await r.logprobs.array();
    const top = (await r.topK!.logprobs.array()).map((row) => row.map((k) => k[0]));
    tf.dispose([r.logprobs, r.mask, r.topK!.ids, r.topK!.logprobs]);
    return [lp, top];
  } finally {
    setBatchLayout(undefined);
  }
}

function maxDiff(a: number[][], b: number[][]): number {
  let d = 0;
  a.forEach((row, i) => row.forEach((x, j) => (d = Math.max(d, Math.abs(x - b[i][j])))));
  return d;
}

/** A capturing optimizer: the step's summed LoRA gradients, then AdamW's update. */
class Capture extends AdamW {
  grads = new Map<string, Float32Array>();
  override applyGradients(grads: Record<string, tf.Tensor>, lr?: number) {
    for (const [k, g] of Object.entries(grads)) this.grads.set(k, g.dataSync() as Float32Array);
    return super.applyGradients(grads, lr);
  }
}

function samplesFor(m: BaseModel): PreparedSample[] {
  const tokens = tokensFor(m);
  return tokens.map((t, b) => ({
    tokens: t,
    promptLength: STARTS[b],
    reward: b === 1 ? -1 : 1,
    // The middle sample carries a hint: the teacher's pass is packed too.
    teachers: b === 1 ? [{ hint: "be brief", tokens: [1, 7, 8, ...t.slice(1)], promptLength: STARTS[b] + 2 }] : [],
    truncated: false,
  }));
}

/** LoRA gradients of one trainSteps (combined method, KL anchor on) in a layout. */
async function stepGrads(m: BaseModel, layout: "packed" | "padded", opts: Partial<TrainOptions>): Promise<Map<string, Float32Array>> {
  const lora = randomLora(m, 5);
  const optimizer = new Capture(loraParamRecord(lora), { lr: 1e-3 });
  setBatchLayout(layout);
  try {
    const before = tf.memory().numTensors;
    await trainSteps({ model: m, lora, optimizer }, samplesFor(m), { method: "combined", steps: 1, batchSize: 3, ppo: { klBeta: 0.1 }, ...opts });
    assert.equal(tf.memory().numTensors, before, "a step leaves no tensor behind");
    return optimizer.grads;
  } finally {
    setBatchLayout(undefined);
    optimizer.dispose();
    disposeLora(lora);
  }
}

for (const batched of [false, true]) {
  describe(`packed batches (attention ${batched ? "as batched products, the GPU path" : "as a loop of 2-D products"})`, () => {
    const models: BaseModel[] = [];
    before(() => setBatchedAttention(batched));
    after(() => {
      setBatchedAttention(undefined);
      models.forEach((m) => m.dispose());
    });

    test("the layout: packed on the CPU path, padded on the batched one; rows, offsets and budgets in real tokens", async () => {
      assert.equal(packedLayout(), !batched);
      const m = await loadBaseModel(await tinyModel({ arch: "llama", layers: 1, dim: 32 }));
      models.push(m);
      const tokens = tokensFor(m);
      const packed = planBatch({ tokens, targetStart: STARTS }, m.config.nVocab, { packed: true }).grid;
      assert.deepEqual([packed.rows, packed.offsets, packed.lens, packed.T], [31, [0, 5, 22], LENS, 17]);
      const padded = planBatch({ tokens, targetStart: STARTS }, m.config.nVocab, { packed: false }).grid;
      assert.deepEqual([padded.rows, padded.offsets, padded.lens], [51, [0, 17, 34], [17, 17, 17]]);
      assert.equal(layoutTokens(LENS, true), 31);
      assert.equal(layoutTokens(LENS, false), 51);
      // The memory plan is asked for a padded batch at least as large in rows and attention scores.
      assert.deepEqual(paddedEquivalent(LENS, true), { seqs: 2, T: 17 });
      assert.deepEqual(paddedEquivalent(LENS, false), { seqs: 3, T: 17 });
      const seqs = LENS.map((n) => ({ tokens: new Array<number>(n).fill(1) }));
      const split = (budget: number) => microBatches(seqs, budget).map((g) => g.map((s) => s.tokens.length));
      setBatchLayout("packed");
      assert.deepEqual(split(26), [[5, 17], [9]]);
      assert.deepEqual(split(31), [LENS]);
      setBatchLayout("padded");
      assert.deepEqual(split(34), [[5, 17], [9]]);
      assert.deepEqual(split(31), [[5], [17], [9]]);
      setBatchLayout(undefined);
    });

    for (const arch of ["qwen3", "llama", "qwen2"] as const) {
      test(`${arch}: packed log-probs and top-k equal the padded grid's and each sequence's alone (1e-5)`, async () => {
        const m = await loadBaseModel(await tinyModel({ arch, layers: 2, dim: 32 }));
        models.push(m);
        const lora = randomLora(m, 3);
        try {
          const tokens = tokensFor(m);
          const before = tf.memory().numTensors;
          const [packed, packedTop] = await scores(m, lora, tokens, STARTS, "packed");
          const [padded, paddedTop] = await scores(m, lora, tokens, STARTS, "padded");
          assert.equal(tf.memory().numTensors, before, "no tensor left behind");
          assert.ok(maxDiff(packed, padded) <= 1e-5, `packed vs padded: ${maxDiff(packed, padded)}`);
          assert.ok(maxDiff(packedTop, paddedTop) <= 1e-5, `top-k packed vs padded: ${maxDiff(packedTop, paddedTop)}`);
          for (let b = 0; b < tokens.length; b++) {
            const [alone] = await scores(m, lora, [tokens[b]], [STARTS[b]], "packed");
            const row = packed[b].slice(0, LENS[b]);
            assert.ok(maxDiff([row], alone) <= 1e-5, `sequence ${b} packed vs alone: ${maxDiff([row], alone)}`);
            // Scored positions only, and a real log-prob at each.
            assert.ok(row.slice(STARTS[b]).every((x) => x < 0));
          }
        } finally {
          disposeLora(lora);
        }
      });
    }

    test("one trainSteps: packed LoRA gradients equal the padded batch's, every block kept or recomputed (1e-5)", async () => {
      const m = await loadBaseModel(await tinyModel({ arch: "qwen3", layers: 2, dim: 32 }));
      models.push(m);
      const padded = await stepGrads(m, "padded", { keptBlocks: 0 });
      for (const kept of [0, 2, 1]) assertGradientsClose(await stepGrads(m, "packed", { keptBlocks: kept }), padded, `packed, ${kept} blocks kept vs padded`);
      assertGradientsClose(await stepGrads(m, "padded", { keptBlocks: 2 }), padded, "padded, kept vs recomputed");
    });

    test("micro-batches split by real tokens add up to the same gradients", async () => {
      const m = await loadBaseModel(await tinyModel({ arch: "llama", layers: 2, dim: 32 }));
      models.push(m);
      const whole = await stepGrads(m, "packed", { keptBlocks: 2 });
      // 26 real tokens: [5, 17] then [9]; 17: each sequence alone.
      assertGradientsClose(await stepGrads(m, "packed", { keptBlocks: 2, microBatchTokens: 26 }), whole, "packed, micro-batches of 26 tokens");
      assertGradientsClose(await stepGrads(m, "packed", { keptBlocks: 0, microBatchTokens: 17 }), whole, "packed, one sequence per micro-batch");
      assertGradientsClose(await stepGrads(m, "padded", { keptBlocks: 0, microBatchTokens: 34 }), whole, "padded, micro-batches of 34 tokens");
    });
  });
}
