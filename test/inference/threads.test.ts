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
