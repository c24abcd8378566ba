import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { defaultThreads, SINGLE_THREAD_BELOW_BYTES } from "../../electron/core/inference/threads.js";
import { storiesModelPath } from "../helpers/cli.js";

test("small models evaluate on one thread by default; larger ones the Llama's default (the math cores)", (t) => {
  const stories = storiesModelPath();
  if (stories) assert.equal(defaultThreads(fs.statSync(stories).size), 1);
  else t.diagnostic("stories260K.gguf is missing: its size is not checked");
  assert.equal(defaultThreads(SINGLE_THREAD_BELOW_BYTES - 1), 1);
  assert.equal(defaultThreads(SINGLE_THREAD_BELOW_BYTES), undefined);
  assert.equal(defaultThreads(4 * 1024 ** 3), undefined);
});

test("on the CPU backend, contexts share the math cores: none asks for more threads than there are", async () => {
  const { Engine } = await import("../../electron/core/inference/engine.js");
  const { tinyModel } = await import("../helpers/models.js");
  const engine = await Engine.load({ modelPath: await tinyModel({ arch: "qwen2" }), backend: "cpu", maxContextSize: 256, sequences: 1 });
  try {
    const cores = engine.llama.cpuMathCores;
    // node-llama-cpp's own default on the CPU is max(4, math cores): on 2 cores, 4 threads a context.
    assert.equal(engine.llama.maxThreads, cores);
    const ctx = await engine.model.createContext({ contextSize: 256 });
    try {
      assert.ok(ctx.idealThreads <= cores, `a context with default threads asks for ${ctx.idealThreads} threads on ${cores} math cores`);
    } finally {
      await ctx.dispose();
    }
  } finally {
    await engine.close();
  }
});

test("chat's evaluation runs on every serving thread even when another context (the gate's probe, the judge) has a batch in flight", async () => {
  const { getLlama } = await import("node-llama-cpp");
  type Token = import("node-llama-cpp").Token;
  const { servingThreads } = await import("../../electron/core/inference/threads.js");
  const { tinyModel } = await import("../helpers/models.js");
  const llama = await getLlama({ gpu: false });
  // Two threads to split, whatever this machine has: node-llama-cpp's splitter counts, it does not look at the cores.
  llama.maxThreads = 2;
  const model = await llama.loadModel({ modelPath: await tinyModel({ arch: "qwen2", dim: 256, layers: 4 }) });
  try {
    const other = await model.createContext({ contextSize: 1024 });
    const serving = await model.createContext({ contextSize: 1024, threads: servingThreads(undefined, llama) });
    assert.deepEqual(servingThreads(undefined, llama), { ideal: 2, min: 2 });
    assert.deepEqual(servingThreads(1, llama), { ideal: 1, min: 1 }, "a count asked for is claimed whole, not raised");
    const tokens = (n: number, from: number) => Array.from({ length: n }, (_, i) => ((from + i * 3) % 200) as Token);
    // The other context's batch is queued first and in flight when chat's prompt comes.
    const busy = other.getSequence().evaluateWithoutGeneratingNewTokens(tokens(512, 7));
    await new Promise((r) => setImmediate(r));
    await serving.getSequence().evaluateWithoutGeneratingNewTokens(tokens(64, 11));
    await busy;
    // As a plain thread count (node-llama-cpp: "ideal, at least 1") chat's batch was handed 1 of the 2.
    assert.equal(serving.currentThreads, 2, "chat's prompt was evaluated on a share of the threads");
    await other.dispose();
    await serving.dispose();
  } finally {
    await model.dispose();
    await llama.dispose();
  }
});
