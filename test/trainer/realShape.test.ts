/**
 * Real widths and vocabularies end to end: `clawrl train` on random-weight models with the
 * exact widths, heads and vocabularies of Qwen2.5-0.5B (151,936 tokens, q/k/v biases) and
 * Qwen3-1.7B (per-head q/k norms, head dim 128), cut to a block or two so CI can afford them,
 * writes an adapter that llama.cpp loads and that moves llama.cpp's log-probs; the full-depth
 * figures are in bench/trainer-real-size.ts.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ensureShapeModel } from "../../models/tiny/shapeCache.js";
import { runCli, tempDir } from "../helpers/cli.js";
import { llamaCppLogProbs, llamaCppTokenize, maxLogProbDiff } from "./parity-reference.js";

for (const [shape, layers] of [
  ["qwen2.5-0.5b", 2],
  ["qwen3-1.7b", 1],
] as const) {
  test(`${shape} widths and vocabulary (${layers} block${layers > 1 ? "s" : ""}): clawrl train writes an adapter llama.cpp loads`, async () => {
    const model = ensureShapeModel(shape, "q8_0", { layers });
    const dir = tempDir();
    const data = path.join(dir, "data.jsonl");
    const rows = [
      { messages: [{ role: "user", content: "Say hello" }], response: "Hello there, nice to meet you.", reward: 1 },
      { messages: [{ role: "user", content: "Say hello" }], response: "Go away.", reward: -1, hint: "Be friendly." },
    ];
    fs.writeFileSync(data, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const out = path.join(dir, "out");
    const r = runCli(
      ["train", "--model", model, "--data", data, "--out", out, "--steps", "2", "--batch-size", "2", "--lr", "0.02", "--max-context", "256"],
      {},
      600_000,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /memory plan: \w+: .*micro-batches of \d+ tokens/);
    assert.match(r.stdout, /step 2\/2 /);
    const adapter = path.join(out, "adapter.gguf");
    const info = JSON.parse(runCli(["inspect", adapter, "--json"]).stdout);
    assert.equal(info.kind, "lora-adapter");
    assert.equal(info.architecture, shape.startsWith("qwen3") ? "qwen3" : "qwen2");

    const tokens = await llamaCppTokenize(model, "Hello there, nice to meet you. Say hello again.");
    const base = await llamaCppLogProbs(model, tokens);
    const adapted = await llamaCppLogProbs(model, tokens, { loraPath: adapter });
    assert.ok(adapted.slice(1).every(Number.isFinite), "finite log-probs with the adapter");
    assert.ok(maxLogProbDiff(adapted, base) > 1e-3, `the trained adapter moves llama.cpp's log-probs (max ${maxLogProbDiff(adapted, base)})`);
  });
}
