/**
 * Learning works: train on a tiny model with our trainer, load the written adapter in
 * llama.cpp (node-llama-cpp) and check the direction and size of the change there.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, describe, test } from "node:test";
import { runTraining } from "../../trainer/entries/offlineTrain.js";
import { SampleTokenizer } from "../../trainer/train/tokenize.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { llamaCppLogProbs } from "./parity-reference.js";

let modelPath: string;
let tok: SampleTokenizer;

before(async () => {
  modelPath = await tinyModel({ arch: "llama" });
  tok = await SampleTokenizer.open(modelPath);
});

/** Sum of llama.cpp log-probs of the response tokens (end token included) after the prompt. */
async function responseLogProbs(messages: Array<{ role: "user"; content: string }>, response: string, loraPath?: string, hint?: string): Promise<number[]> {
  const prompt = tok.renderPrompt(messages, hint);
  const resp = tok.tokenizeResponse(response);
  const lp = await llamaCppLogProbs(modelPath, [...prompt, ...resp], loraPath ? { loraPath } : {});
  return lp.slice(prompt.length);
}
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

function writeJsonl(dir: string, rows: object[]): string {
  const f = path.join(dir, "data.jsonl");
  fs.writeFileSync(f, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return f;
}

describe("learning, measured under llama.cpp with the adapter we wrote", () => {
  test("Binary RL: rewarding A and punishing B raises log p(A) − log p(B) by more than 10 nats (measured: about 50)", async () => {
    const dir = tempDir();
    const messages = [{ role: "user" as const, content: "What color is the sky?" }];
    const data = writeJsonl(dir, [
      { messages, response: "Blue.", reward: 1 },
      { messages, response: "Green.", reward: -1 },
    ]);
    const out = path.join(dir, "out");
    const metrics = await runTraining({ modelPath, dataPath: data, outDir: out, method: "binary", steps: 8, lr: 3e-3, rank: 4, alpha: 8 });
    assert.equal(metrics.totalSteps, 8);
    const adapter = path.join(out, "adapter.gguf");
    const before = sum(await responseLogProbs(messages, "Blue.")) - sum(await responseLogProbs(messages, "Green."));
    const after = sum(await responseLogProbs(messages, "Blue.", adapter)) - sum(await responseLogProbs(messages, "Green.", adapter));
    console.log(`binary: log p(A) − log p(B) ${before.toFixed(3)} → ${after.toFixed(3)} (rise ${(after - before).toFixed(3)} nats)`);
    assert.ok(after - before > 10, `rise ${after - before} ≤ 10 nats`);
  });

  test("OPD: the per-token gap between teacher (hinted) and student log-probs shrinks by more than half", async () => {
    const dir = tempDir();
    const messages = [{ role: "user" as const, content: "Tell me about the sea." }];
    const hint = "Answer in capital letters only.";
    const response = "THE SEA IS BIG.";
    const data = writeJsonl(dir, [{ messages, response, hint }]);
    const out = path.join(dir, "out");
    await runTraining({ modelPath, dataPath: data, outDir: out, method: "opd", steps: 8, lr: 3e-3, rank: 4, alpha: 8 });
    const adapter = path.join(out, "adapter.gguf");
    const gap = (t: number[], s: number[]) => sum(t.map((x, i) => Math.abs(x - s[i]))) / t.length;
    const before = gap(await responseLogProbs(messages, response, undefined, hint), await responseLogProbs(messages, response));
    const after = gap(await responseLogProbs(messages, response, adapter, hint), await responseLogProbs(messages, response, adapter));
    console.log(`opd: mean |lp_teacher − lp_student| per token ${before.toFixed(4)} → ${after.toFixed(4)}`);
    assert.ok(before > 0.05, `the hint should change the tiny model's log-probs (gap ${before})`);
    assert.ok(after < before / 2, `gap ${before} → ${after} did not halve`);
  });
});
