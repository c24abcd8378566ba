/**
 * The tfjs model beyond parity: the vocabulary-sliced head equals a plain full log-softmax, the
 * block-by-block backward (gradient checkpointing) equals plain autodiff through the whole
 * model, streamed weights equal resident ones, batching/padding does not change results, no
 * tensors leak, bad input is refused clearly. Runs on stories260K (real weights).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel, tokenLogProbs, type BaseModel } from "../../trainer/model/index.js";
import { blockForward } from "../../trainer/model/block.js";
import { rmsNorm } from "../../trainer/model/norm.js";
import { backwardBody } from "../../trainer/model/backward.js";
import { blockLora, runBody, seqContext } from "../../trainer/model/forward.js";
import { headForward, headGradient } from "../../trainer/model/head.js";
import { finalNorm, planBatch, scoredRows } from "../../trainer/model/logprobs.js";
import { createLora, disposeLora, loraVariables, type LoraParams } from "../../trainer/lora/params.js";
import { storiesModelPath } from "../helpers/cli.js";
import { frozenTensor } from "../../trainer/model/fast-matmul.js";

const storiesPath = storiesModelPath();
let model: BaseModel;
/** The same model with 100-row vocabulary slices (stories260K has 512 tokens: 6 slices). */
let sliced: BaseModel;
/** Sliced, with every block and the head streamed from the host (packed, and as f32). */
let streamed: BaseModel;
let streamedF32: BaseModel;
/** streamedF32 with the backend's products where it would use the native ones. */
let streamedF32Wasm: BaseModel;
let lora: LoraParams;

const seqA = [1, 403, 407, 261, 378, 429, 267, 10, 55, 99, 300, 12];
const seqB = [1, 70, 80, 90, 100, 110];

before(async () => {
  await initBackend();
  model = await loadBaseModel(storiesPath);
  sliced = await loadBaseModel(storiesPath, { headChunkRows: 100 });
  streamed = await loadBaseModel(storiesPath, { headChunkRows: 100, placement: { layers: "host-packed", head: "host-packed" } });
  streamedF32 = await loadBaseModel(storiesPath, { headChunkRows: 100, placement: { layers: "host-f32", head: "host-f32" } });
  streamedF32Wasm = await loadBaseModel(storiesPath, { headChunkRows: 100, placement: { layers: "host-f32", head: "host-f32" }, hostProducts: false });
  lora = createLora(model, { rank: 4, alpha: 8, seed: 7 });
  // Non-zero B so the adapter matters and A gets gradients too.
  tf.tidy(() => {
    for (const [i, v] of loraVariables(lora).entries()) if (i % 2 === 1) v.assign(tf.randomNormal(v.shape, 0, 0.05, "float32", 100 + i));
  });
});
after(() => {
  if (lora) disposeLora(lora);
  for (const m of [model, sliced, streamed, streamedF32, streamedF32Wasm]) m?.dispose();
});

/** The whole output projection [V, D] (device placement: the resident slices, concatenated). */
function fullOutput(m: BaseModel): tf.Tensor2D {
  const parts: tf.Tensor2D[] = [];
  for (let c = 0; c < m.weights.numHeadChunks; c++) parts.push(frozenTensor(m.weights.headChunk(c).w));
  return parts.length === 1 ? parts[0] : tf.concat<tf.Tensor2D>(parts);
}

/**
 * Plain autodiff reference for Σ log p(scored tokens): every block taped in one function,
 * full logits, tf.logSoftmax, one-hot selection (gather's gradient needs a kernel wasm lacks).
 */
function plainSumLogProb(tokens: number[][], starts: number[]): tf.Scalar {
  // A padded grid (the layout before packing): the reference for the packed rows ourGrads runs.
  const plan = planBatch({ tokens, targetStart: starts }, model.config.nVocab, { packed: false });
  const { B, T } = plan.grid;
  const ctx = seqContext(model, B, T);
  let x = model.weights.embed(plan.grid.ids);
  for (let l = 0; l < model.config.nLayer; l++) x = blockForward(x, model.weights.layer(l), blockLora(lora, l), ctx);
  const h = rmsNorm(x, model.weights.outputNorm, model.config.rmsEps);
  const logp = tf.logSoftmax(tf.matMul(h, fullOutput(model), false, true));
  const V = model.config.nVocab;
  const onehot = new Float32Array(B * T * V);
  tokens.forEach((seq, b) => {
    for (let t = Math.max(1, starts[b]); t < seq.length; t++) onehot[(b * T + t - 1) * V + seq[t]] = 1;
  });
  return tf.sum(tf.mul(logp, tf.tensor2d(onehot, [B * T, V])));
}

/** One number from the backend (async: the same file runs on webgpu, webgpu-training.test.ts). */
async function num(f: () => tf.Tensor): Promise<number> {
  const t = tf.tidy(f);
  const [v] = await t.data();
  t.dispose();
  return v;
}

async function arr<T>(t: tf.Tensor): Promise<T> {
  return (await t.array()) as T;
}

/** Our path: forward keeping block inputs, sliced head with E_p[W], head gradient, block-by-block backward. */
async function ourGrads(m: BaseModel, tokens: number[][], starts: number[]): Promise<{ value: number; grads: Map<string, tf.Tensor2D> }> {
  const plan = planBatch({ tokens, targetStart: starts }, m.config.nVocab);
  const ctx = seqContext(m, plan.grid);
  try {
    const body = runBody(m, lora, plan.grid, ctx, true);
    const h = tf.tidy(() => finalNorm(m, scoredRows(body.final, plan)));
    const head = headForward(m.weights, { h, ids: plan.targets, expectation: true });
    const value = await num(() => tf.sum(head.logprobs!));
    const g = tf.onesLike<tf.Tensor2D>(head.logprobs!); // ∂(Σ lp)/∂lp = 1
    const dh = headGradient(m.weights, plan.targets, g, head.expectation!);
    const grads = backwardBody(m, lora, plan, { inputs: body.inputs!, final: body.final }, dh, ctx);
    tf.dispose([h, head.lse, head.logprobs!, head.expectation!, g, dh]);
    return { value, grads };
  } finally {
    ctx.dispose();
  }
}

async function compareGrads(ref: Record<string, tf.Tensor>, got: Map<string, tf.Tensor2D>, what: string): Promise<void> {
  let maxAbs = 0;
  let maxDiff = 0;
  for (const [key, p] of lora.pairs) {
    for (const [half, v] of [
      ["lora_a", p.a],
      ["lora_b", p.b],
    ] as const) {
      const a = await ref[v.name].data();
      const b = await got.get(`${key}.${half}`)!.data();
      for (let i = 0; i < a.length; i++) {
        maxAbs = Math.max(maxAbs, Math.abs(a[i]));
        maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
      }
    }
  }
  assert.ok(maxAbs > 1e-3, `${what}: gradients w.r.t. LoRA are not all zero (max ${maxAbs})`);
  assert.ok(maxDiff <= 1e-4 * Math.max(1, maxAbs), `${what}: gradient differs from plain autodiff by ${maxDiff} (max ${maxAbs})`);
}

test("block-by-block backward with the sliced head equals plain autodiff through the whole model", async () => {
  const tokens = [seqA, seqB];
  const starts = [2, 1];
  const vars = loraVariables(lora);
  const plain = tf.variableGrads(() => plainSumLogProb(tokens, starts), vars);
  const [plainValue] = await plain.value.data();
  for (const [m, what] of [
    [model, "resident, one slice"],
    [sliced, "resident, 6 slices"],
    [streamed, "streamed packed, 6 slices"],
    [streamedF32, `streamed f32, 6 slices, ${streamedF32.weights.hostProducts ? "native" : "backend"} products`],
    [streamedF32Wasm, "streamed f32, 6 slices, backend products"],
  ] as const) {
    const ours = await ourGrads(m, tokens, starts);
    assert.ok(Math.abs(ours.value - plainValue) < 1e-3, `${what}: Σ log p ${ours.value} vs ${plainValue}`);
    await compareGrads(plain.grads, ours.grads, what);
    tf.dispose([...ours.grads.values()]);
  }
  tf.dispose([plain.value, ...Object.values(plain.grads)]);
});

test("the sliced head's log-probs, top-k and KL equal a plain full log-softmax within 1e-5", async () => {
  const plan = planBatch({ tokens: [seqA], targetStart: [1] }, model.config.nVocab);
  const n = plan.targets.length;
  const cand = new Int32Array(n * 3).map((_, i) => (i * 37 + 5) % model.config.nVocab);
  const t = tf.tidy(() => {
    const ctx = seqContext(model, 1, seqA.length);
    const h = finalNorm(model, scoredRows(runBody(model, lora, plan.grid, ctx, false).final, plan));
    const other = finalNorm(model, scoredRows(runBody(model, null, plan.grid, ctx, false).final, plan));
    ctx.dispose();
    const logp = tf.logSoftmax(tf.matMul(h, fullOutput(model), false, true));
    const logq = tf.logSoftmax(tf.matMul(other, fullOutput(model), false, true));
    const res = headForward(sliced.weights, { h, ids: cand, topK: 4, klAgainst: other });
    const plainTop = tf.topk(logp, 4);
    const plainKl = tf.sum(tf.mul(tf.exp(logp), tf.sub(logp, logq)), 1);
    return {
      logp,
      got: res.logprobs!,
      topIds: res.top!.ids,
      plainIds: plainTop.indices,
      topDiff: tf.max(tf.abs(tf.sub(res.top!.logprobs, plainTop.values))),
      klDiff: tf.max(tf.abs(tf.sub(res.kl!, plainKl))),
      klMax: tf.max(plainKl),
    };
  });
  const lp = await arr<number[][]>(t.logp);
  const got = await arr<number[][]>(t.got);
  let worst = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j < 3; j++) worst = Math.max(worst, Math.abs(got[i][j] - lp[i][cand[i * 3 + j]]));
  assert.ok(worst < 1e-5, `candidate log-probs differ by ${worst}`);
  assert.deepEqual(await t.topIds.array(), await t.plainIds.array(), "same top-k ids across slices");
  assert.ok((await t.topDiff.data())[0] < 1e-5);
  const [klDiff] = await t.klDiff.data();
  assert.ok((await t.klMax.data())[0] > 1e-3, "the adapter moves the distribution");
  assert.ok(klDiff < 1e-5, `KL differs by ${klDiff}`);
  tf.dispose(Object.values(t));
});

test("streamed weights give the same log-probs as resident ones, and leave nothing on the backend", async () => {
  const run = async (m: BaseModel) => {
    const r = tokenLogProbs(m, lora, { tokens: [seqA, seqB], targetStart: [1, 2] });
    const out = await arr<number[][]>(r.logprobs);
    tf.dispose([r.logprobs, r.mask]);
    return out;
  };
  const a = await run(model);
  const n0 = tf.memory().numTensors;
  const bytes0 = tf.memory().numBytes;
  for (const m of [streamed, streamedF32, streamedF32Wasm]) {
    const b = await run(m);
    assert.equal(tf.memory().numTensors, n0);
    assert.equal(tf.memory().numBytes, bytes0, "every streamed upload was freed");
    // 1e-5 relative: the native products sum in another order than wasm's (log-probs near -14
    // differ by ~1.5e-5 after five blocks); a wrong product is off by whole units.
    for (let i = 0; i < a.length; i++)
      for (let t = 0; t < a[i].length; t++) {
        const tol = 1e-5 * Math.max(1, Math.abs(a[i][t]));
        assert.ok(Math.abs(a[i][t] - b[i][t]) < tol, `[${i}][${t}] ${a[i][t]} vs ${b[i][t]}`);
      }
  }
  const resident = model.weights.memory();
  const host = streamed.weights.memory();
  assert.ok(host.deviceBytes < resident.deviceBytes / 10, `streamed keeps ${host.deviceBytes} B on the backend (resident ${resident.deviceBytes} B)`);
  assert.ok(host.hostBytes > 0);
  // stories260K is F32 in the file: packed and f32 hold the same bytes; a quantized file differs.
  assert.equal(streamedF32.weights.memory().deviceBytes, host.deviceBytes);
});

test("a fresh adapter (B = 0) changes nothing; a non-zero one changes the log-probs", async () => {
  const fresh = createLora(model, { rank: 4, alpha: 8, seed: 1 });
  const run = async (l: LoraParams | null) => {
    const r = tokenLogProbs(model, l, { tokens: [seqA], targetStart: [1] });
    const out = (await arr<number[][]>(r.logprobs))[0];
    tf.dispose([r.logprobs, r.mask]);
    return out;
  };
  const base = await run(null);
  assert.deepEqual(await run(fresh), base);
  const adapted = await run(lora);
  assert.ok(
    adapted.some((x, i) => Math.abs(x - base[i]) > 1e-3),
    "the trained-looking adapter moves some log-prob",
  );
  disposeLora(fresh);
});

test("right padding in a batch does not change a sequence's log-probs; masks mark scored positions", async () => {
  const alone = tokenLogProbs(model, lora, { tokens: [seqB], targetStart: [2] });
  const batched = tokenLogProbs(model, lora, { tokens: [seqA, seqB], targetStart: [1, 2] });
  const a = (await arr<number[][]>(alone.logprobs))[0];
  const b = (await arr<number[][]>(batched.logprobs))[1];
  for (let t = 0; t < seqB.length; t++) assert.ok(Math.abs(a[t] - b[t]) < 1e-5, `position ${t}: ${a[t]} vs ${b[t]}`);
  assert.deepEqual(b.slice(seqB.length), new Array(seqA.length - seqB.length).fill(0));
  assert.deepEqual((await arr<number[][]>(batched.mask))[1], [0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
  tf.dispose([alone.logprobs, alone.mask, batched.logprobs, batched.mask]);
});

test("top-k: sorted log-probs of the next-token distribution, consistent with the scored token", async () => {
  const r = tokenLogProbs(sliced, null, { tokens: [seqA], targetStart: [1] }, { topK: 5 });
  const ids = (await arr<number[][][]>(r.topK!.ids))[0];
  const lps = (await arr<number[][][]>(r.topK!.logprobs))[0];
  const lp = (await arr<number[][]>(r.logprobs))[0];
  assert.equal(r.topK!.ids.dtype, "int32");
  assert.deepEqual(ids[0], [0, 0, 0, 0, 0], "position 0 is not scored");
  for (let t = 1; t < seqA.length; t++) {
    for (let j = 1; j < 5; j++) assert.ok(lps[t][j] <= lps[t][j - 1], "sorted descending");
    const mass = lps[t].reduce((s, x) => s + Math.exp(x), 0);
    assert.ok(mass <= 1 + 1e-5 && mass > 0, "a probability mass");
    // Within float rounding: the scored token's logit is a row dot product, the top-k's come from a matMul.
    assert.ok(lp[t] <= lps[t][0] + 1e-5, `the scored token is not above the top-1 (${lp[t]} vs ${lps[t][0]})`);
    const j = ids[t].indexOf(seqA[t]);
    if (j >= 0) assert.ok(Math.abs(lps[t][j] - lp[t]) < 1e-5, "same log-prob for the same token");
  }
  tf.dispose([r.logprobs, r.mask, r.topK!.ids, r.topK!.logprobs]);
});

test("no tensors leak across forward and gradient calls", async () => {
  const step = async () => {
    const { grads } = await ourGrads(streamed, [seqA, seqB], [1, 1]);
    tf.dispose([...grads.values()]);
    const r = tokenLogProbs(sliced, lora, { tokens: [seqA, seqB], targetStart: [1, 1] }, { topK: 3 });
    tf.dispose([r.logprobs, r.mask, r.topK!.ids, r.topK!.logprobs]);
  };
  await step();
  const before = tf.memory();
  for (let i = 0; i < 3; i++) await step();
  assert.equal(tf.memory().numTensors, before.numTensors);
  assert.equal(tf.memory().numBytes, before.numBytes);
});

test("bad batches are refused with a clear message", () => {
  assert.throws(() => tokenLogProbs(model, null, { tokens: [[1, 2, 512]], targetStart: [1] }), /token id 512 at \[0\]\[2\] is outside the vocabulary/);
  assert.throws(() => tokenLogProbs(model, null, { tokens: [[1, 2]], targetStart: [] }), /1 sequences but 0 targetStart/);
  assert.throws(() => tokenLogProbs(model, null, { tokens: [[1]], targetStart: [1] }), /shorter than 2 tokens/);
});
