/**
 * The trainer process lives as long as the app: what a learning cycle allocates must be given
 * back. A real worker (the process the core forks) goes through the commands of a live cycle
 * four times: train, evaluate against the served adapter, verify the candidate, and every other
 * cycle a rollback (load). Its tensors and their bytes (the `memory` command: tf.memory()) must
 * be the same after every cycle. Each adapter the trainer made or read once left a copy of its
 * first values behind (tf.variable keeps its initial tensor), ~7 MiB a cycle at a real vocabulary.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { WorkerClient } from "../../electron/core/training/workerClient.js";
import type { ReplyOf } from "../../trainer/protocol.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

let worker: WorkerClient;
let dir: string;

before(async () => {
  dir = tempDir("clawrl-worker-memory-");
  worker = new WorkerClient({ niceness: 0, onLog: () => undefined });
  const ready = await worker.request({
    type: "init",
    modelPath: await tinyModel({ arch: "qwen2" }),
    settings: { method: "combined", rank: 4, alpha: 8, lr: 1e-3, maxContext: 128, teacher: "current", seed: 1, backend: "wasm", klBeta: 0.1 },
    resumeDir: null,
  });
  assert.equal(ready.backend, "wasm");
});

after(async () => {
  await worker?.stop();
});

/** Token ids below the tiny model's vocabulary, repeatable. */
const ids = (n: number, salt: number) => Array.from({ length: n }, (_, i) => 1 + ((i * 37 + salt * 101) % 120));

test("a learning cycle gives back every tensor it made: the trainer's memory is flat over cycles", async () => {
  const samples = Array.from({ length: 4 }, (_, i) => ({
    prompt_tokens: ids(12, i),
    response_tokens: ids(10, i + 20),
    reward: i % 2 ? 1 : -1,
    teacher_prompt_tokens: ids(16, i + 40),
  }));
  const turns = Array.from({ length: 4 }, (_, i) => ({ tokens: ids(24, i + 60), start: 12 }));
  const after: ReplyOf<"memory">[] = [];
  let served: string | null = null;
  for (let cycle = 0; cycle < 4; cycle++) {
    const outDir = path.join(dir, `candidate-${cycle}`);
    await worker.request({ type: "train", runId: `run-${cycle}`, samples, steps: 1, lr: 1e-3, batchSize: 4, outDir });
    await worker.request({
      type: "evaluate",
      runId: `run-${cycle}`,
      servingAdapter: served && path.join(served, "adapter.gguf"),
      prompts: turns,
      liked: turns.slice(0, 2),
      disliked: turns.slice(2),
      heldBack: turns.slice(1, 3),
    });
    assert.equal((await worker.request({ type: "verify", dir: outDir })).ok, true);
    // A rejected candidate: the trainer goes back to the served checkpoint.
    if (cycle % 2 === 1) assert.equal((await worker.request({ type: "load", dir: served })).dir, served);
    else served = outDir;
    assert.ok(fs.existsSync(path.join(outDir, "adapter.gguf")));
    after.push(await worker.request({ type: "memory" }));
  }
  const [first, ...rest] = after;
  assert.ok(first.tensors > 0 && first.tensorBytes > 0, "the base model and the adapter are held");
  assert.ok(first.wasmHeapBytes !== null && first.wasmHeapBytes >= first.tensorBytes, "the wasm heap holds the tensors");
  assert.ok(first.rssBytes > 0 && first.jsHeapBytes > 0);
  for (const [i, m] of rest.entries()) {
    assert.equal(m.tensors, first.tensors, `tensors after cycle ${i + 2}`);
    assert.equal(m.tensorBytes, first.tensorBytes, `tensor bytes after cycle ${i + 2}`);
  }
});

test("a malformed memory command is answered with an error, and the worker goes on", async () => {
  const bad = new Promise<string>((resolve) => {
    worker.child.once("message", (m: { type: string; message?: string }) => resolve(m.message ?? m.type));
  });
  worker.child.send({ type: "memory" });
  assert.match(await bad, /bad command: id/);
  assert.ok((await worker.request({ type: "memory" })).tensors > 0);
});
