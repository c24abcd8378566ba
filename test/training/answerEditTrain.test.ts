/**
 * Issue 30: an assistant answer the user rewrote is trained on by the real trainer process, with
 * the edit's tokens as the target. The sample comes from the real store and sample pool (an
 * answer_edit line on a recorded turn); the trainer tokenizes the edit after the exact served
 * prompt (the target ids are the edit tokenized with the model's vocabulary, end-of-turn token
 * included), trains three combined steps on it, and the candidate gives the edit's tokens a higher
 * log-prob than the base model does.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, test } from "node:test";
import type { Token } from "node-llama-cpp";
import { WorkerClient } from "../../electron/core/training/workerClient.js";
import { EDIT_SAMPLE_SUFFIX, TurnSamplePool } from "../../electron/core/rollout/samples.js";
import { SampleTokenizer } from "../../trainer/train/tokenize.js";
import { isEligible } from "../../trainer/train/trainSteps.js";
import { METHODS } from "../../trainer/protocol.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { addTurn, tempStore } from "../judge/fixtures.js";

let model: string;
let worker: WorkerClient;
let tokenizer: SampleTokenizer;

before(async () => {
  model = await tinyModel({ arch: "qwen2" });
  tokenizer = await SampleTokenizer.open(model);
  worker = new WorkerClient({ niceness: 0, onLog: () => undefined });
  const ready = await worker.request({
    type: "init",
    modelPath: model,
    settings: { method: "combined", rank: 4, alpha: 8, lr: 1e-2, maxContext: 512, teacher: "current", seed: 1, backend: "wasm", klBeta: 0.1 },
    resumeDir: null,
  });
  assert.equal(ready.backend, "wasm");
});

after(async () => {
  await worker?.stop();
  await tokenizer?.dispose();
});

test("an answer edit's sample trains the edit's tokens: they are the target, and their log-prob rises after the trainer's steps", async (t) => {
  const { store, bus } = tempStore();
  store.updateSettings({ heldBackShare: 0 });
  const messages = [{ role: "user" as const, content: "Where do cats sleep?" }];
  const promptTokens = tokenizer.renderPrompt(messages);
  const turnId = addTurn(store, { messages, promptTokens, text: "Dogs run." });
  const pool = new TurnSamplePool(store, bus);
  const edit = "Cats sleep in the sun on the warm mat.";
  const answerEdit = store.appendAnswerEdit(turnId, edit);
  bus.emit("answerEdit", { turnId, sessionId: store.turnEntry(turnId)!.sessionId, answerEdit });
  const item = pool.get(turnId + EDIT_SAMPLE_SUFFIX);
  assert.ok(item, "the edit is in the pool");
  const sample = item.sample;

  // The target: the served prompt exactly, then the edit as the model's vocabulary writes it, closed by the end-of-turn token.
  const prepared = tokenizer.prepare(sample, { maxContext: 512 });
  const target = prepared.tokens.slice(prepared.promptLength);
  assert.deepEqual(prepared.tokens.slice(0, prepared.promptLength), promptTokens);
  assert.deepEqual(target, tokenizer.tokenizeResponse(edit));
  assert.equal(tokenizer.model.detokenize(target.slice(0, -1) as Token[]), edit);
  assert.equal(prepared.reward, 1);
  assert.equal(prepared.servedLogprobs, undefined, "never served: lp_old is on-policy");
  assert.equal(prepared.teachers.length, 1, "the teacher reads the edit");
  assert.ok(prepared.teachers[0].tokens.length > prepared.tokens.length);
  assert.deepEqual(prepared.teachers[0].tokens.slice(prepared.teachers[0].promptLength), target, "the teacher scores the edit's tokens");
  // Every method trains on it: the RL term (+1) and the teacher (the edit as hint).
  for (const method of METHODS) assert.ok(isEligible(method, prepared), method);

  // The real trainer process trains on the pool's sample as the supervisor sends it.
  const pool2 = pool.ready().map((i) => i.id);
  assert.ok(pool2.includes(turnId + EDIT_SAMPLE_SUFFIX));
  const dir = tempDir("clawrl-answer-edit-");
  const res = await worker.request({ type: "train", runId: "edit-1", samples: [sample], steps: 3, lr: 1e-2, batchSize: 1, outDir: path.join(dir, "c1") });
  assert.equal(res.totalSteps, 3);
  assert.ok(res.steps.every((s) => Number.isFinite(s.loss)));
  const scored = { tokens: prepared.tokens, start: prepared.promptLength };
  const ev = await worker.request({ type: "evaluate", runId: "edit-1", servingAdapter: null, prompts: [scored], liked: [scored], disliked: [] });
  assert.equal(ev.liked.count, 1);
  const { candidate, serving } = ev.liked;
  assert.ok(candidate !== null && serving !== null);
  t.diagnostic(`mean log-prob of the edit's tokens: base ${serving.toFixed(4)}, after 3 steps ${candidate.toFixed(4)}`);
  assert.ok(candidate > serving + 0.05, `mean log-prob of the edit's tokens: base ${serving.toFixed(4)} → trained ${candidate.toFixed(4)}`);
  pool.close();
  store.close();
});
