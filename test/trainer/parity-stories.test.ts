/**
 * Parity on real trained weights: our tfjs forward pass on stories260K (llama, F32,
 * SentencePiece) gives the same per-token log-probs as llama.cpp within 1e-3.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { loadBaseModel, tokenLogProbs, type BaseModel } from "../../trainer/model/index.js";
import { storiesModelPath } from "../helpers/cli.js";
import { llamaCppDistributions, llamaCppLogProbs, llamaCppTokenize, ourBatchLogProbs } from "./parity-reference.js";

const storiesPath = storiesModelPath();
const TOL = 1e-3;
let model: BaseModel;

before(async () => {
  await initBackend();
  model = await loadBaseModel(storiesPath);
});
after(() => model?.dispose());

function ours(tokens: number[][], targetStart: number[]): Promise<number[][]> {
  return ourBatchLogProbs(model, null, tokens, targetStart);
}

function assertClose(actual: number[], expected: number[], from: number, what: string) {
  let worst = 0;
  for (let t = from; t < expected.length; t++) {
    assert.ok(Number.isFinite(actual[t]), `${what}: position ${t} is not finite`);
    worst = Math.max(worst, Math.abs(actual[t] - expected[t]));
  }
  assert.ok(worst <= TOL, `${what}: max |ours − llama.cpp| = ${worst.toExponential(2)} > ${TOL}`);
}

test("stories260K: log-probs of a tokenized story equal llama.cpp's within 1e-3", async () => {
  const tokens = await llamaCppTokenize(
    storiesPath,
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her dog.",
  );
  assert.ok(tokens.length > 20, "the story tokenizes to a real sequence");
  const ref = await llamaCppLogProbs(storiesPath, tokens);
  const mine = (await ours([tokens], [1]))[0];
  assertClose(mine, ref, 1, "story");
  // The model is trained on such text: most tokens are predictable, so this is not a flat distribution.
  assert.ok(ref.slice(1).filter((x) => x > -1).length > tokens.length / 3, "reference assigns high probability to most story tokens");
});

test("stories260K: arbitrary token ids (low-probability tail) match too, and a padded batch matches each sequence alone", async () => {
  const a = [1, 403, 407, 261, 378, 429, 267, 10, 55, 99, 300, 12, 511, 2, 77];
  const b = [1, 70, 80, 90, 100];
  const [refA, refB] = [await llamaCppLogProbs(storiesPath, a), await llamaCppLogProbs(storiesPath, b)];
  const [mineA, mineB] = await ours([a, b], [1, 3]);
  assertClose(mineA, refA, 1, "sequence a in batch");
  assertClose(mineB, refB, 3, "sequence b in batch");
  assert.deepEqual(mineB.slice(0, 3), [0, 0, 0], "positions before targetStart are 0");
  assert.deepEqual(mineB.slice(b.length), new Array(a.length - b.length).fill(0), "padding is 0");
});

test("stories260K: top-k next-token candidates and their log-probs equal llama.cpp's", async () => {
  const tokens = await llamaCppTokenize(storiesPath, "Tom had a red ball. He threw it to his friend, and they laughed.");
  const K = 5;
  const dists = await llamaCppDistributions(storiesPath, tokens);
  const r = tokenLogProbs(model, null, { tokens: [tokens], targetStart: [1] }, { topK: K });
  const ids = r.topK!.ids.arraySync()[0];
  const lps = r.topK!.logprobs.arraySync()[0];
  tf.dispose([r.logprobs, r.mask, r.topK!.ids, r.topK!.logprobs]);
  let compared = 0;
  for (let t = 1; t < tokens.length; t++) {
    const ref = [...dists[t - 1]].sort((a, b) => b[1] - a[1]);
    for (let j = 0; j < K; j++) {
      // Our j-th candidate has llama.cpp's log-prob for that id, and the same rank unless two
      // candidates are within the tolerance of each other (a legitimate tie).
      const refLp = dists[t - 1].get(ids[t][j])!;
      assert.ok(Math.abs(refLp - lps[t][j]) <= TOL, `position ${t} candidate ${j}: ${lps[t][j]} vs ${refLp}`);
      assert.ok(Math.abs(ref[j][1] - lps[t][j]) <= TOL, `position ${t}: rank ${j} log-prob ${lps[t][j]} vs llama.cpp's ${ref[j][1]}`);
      compared++;
    }
  }
  assert.equal(compared, (tokens.length - 1) * K);
});
