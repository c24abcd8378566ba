/**
 * The trainer's memory plan: its estimate never falls below what a step really holds (measured
 * with tf.profile on real-width, real-vocabulary models cut to two blocks), it picks the
 * fastest placement that fits, lowers the training context before refusing, refuses what
 * cannot fit with needed vs available, and `clawrl train` refuses before loading.
 */
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { createLora, disposeLora } from "../../trainer/lora/params.js";
import { loadBaseModel } from "../../trainer/model/base-model.js";
import { nativeSwigluFor } from "../../trainer/model/swiglu.js";
import { nativeRmsNormFor } from "../../trainer/model/norm.js";
import { hostAttentionFor } from "../../trainer/model/attention-host.js";
import { nativeCausalSoftmaxFor } from "../../trainer/model/attention-softmax.js";
import { fusedLoraFor } from "../../trainer/model/lora-linear.js";
import { AdamW } from "../../trainer/optim/adamw.js";
import { hostAvailableBytes, parseByteSize } from "../../models/plan/available.js";
import {
  PASS_CACHE_ROW_BYTES,
  estimate,
  footprintFromConfig,
  planMemory,
  readModelFootprint,
  type BackendMemory,
  type ModelFootprint,
} from "../../models/plan/memoryPlan.js";
import { configOfShape } from "../../models/trainability.js";
import { findShape } from "../../models/tiny/shapes.js";
import { loraParamRecord, trainSteps } from "../../trainer/train/trainSteps.js";
import { ensureShapeModel } from "../../models/tiny/shapeCache.js";
import { runCli, tempDir } from "../helpers/cli.js";

const GiB = 2 ** 30;
const wasm: BackendMemory = { name: "wasm", deviceBytes: 4294901760, sharesHostMemory: true };

describe("memory plan vs a measured step", () => {
  before(async () => {
    await initBackend("wasm");
  });
  // Two blocks of the real width and the real vocabulary: the per-token and head terms are the
  // real ones; only the number of kept block inputs is smaller.
  // hostProducts false: the backend's own products even where the native ones are built.
  for (const [id, B, T, kept, hostProducts] of [
    ["qwen2.5-0.5b", 2, 96, 0, undefined],
    ["qwen2.5-0.5b", 2, 96, 0, false],
    ["smollm2-135m", 1, 256, 0, undefined],
    ["smollm2-135m", 1, 256, 2, undefined],
    // The cycle's micro-batch (16 answers of ~81 tokens) on the 0.5B widths, with blocks kept: the plan keeps blocks there.
    ["qwen2.5-0.5b", 16, 81, 2, undefined],
  ] as const) {
    const products = hostProducts === false ? ", the backend's products" : "";
    test(`${id} (2 blocks), ${B} × ${T} tokens, ${kept} blocks' activations kept${products}: the plan is at least the measured peak, and not wildly above it`, async (t) => {
      const file = ensureShapeModel(id, "q8_0", { layers: 2 });
      const shape = readModelFootprint(file);
      const placement = { layers: "host-f32", head: "host-f32" } as const;
      const model = await loadBaseModel(file, { placement, hostProducts });
      const V = model.config.nVocab;
      const samples = Array.from({ length: B }, (_, b) => ({
        tokens: Array.from({ length: T }, (_, i) => (i * 7919 + b * 31 + 1) % V),
        promptLength: 8,
        reward: 1,
        teachers: [],
        truncated: false,
      }));
      const lora = createLora(model, { rank: 16, alpha: 32 });
      const optimizer = new AdamW(loraParamRecord(lora), { lr: 1e-4 });
      const before = tf.memory().numBytes;
      try {
        const info = await tf.profile(async () => {
          await trainSteps({ model, lora, optimizer }, samples, { method: "binary", steps: 1, batchSize: B, keptBlocks: kept });
        });
        const measured = info.peakBytes - before;
        const est = estimate(
          // As the model runs: with native products its streamed weights never reach the backend.
          {
            shape,
            backend: {
              name: "webgpu",
              sharesHostMemory: false,
              hostProducts: model.weights.hostProducts,
              hostSwiglu: nativeSwigluFor(tf.getBackend()) !== null,
              hostLora: model.weights.hostProducts && fusedLoraFor(tf.getBackend()),
              hostNorm: nativeRmsNormFor(tf.getBackend()) !== null,
              hostSoftmax: nativeCausalSoftmaxFor(tf.getBackend()) !== null,
              hostAttention: hostAttentionFor(tf.getBackend()),
            },
            hostAvailableBytes: 1e15,
            rank: 16,
            maxContext: T,
            batchSize: B,
          },
          placement,
          B,
          T,
          kept,
        );
        // Less the warm trainer's pass cache: a fixed reservation for rows kept between cycles,
        // which a step alone does not hold (with the plan's slack on it, as on every part).
        const slack = est.needDevice / est.device.reduce((a, p) => a + p.bytes, 0);
        const planned = est.needDevice - PASS_CACHE_ROW_BYTES * slack;
        t.diagnostic(`planned ${(planned / 2 ** 20).toFixed(0)} MiB, measured ${(measured / 2 ** 20).toFixed(0)} MiB`);
        // Sanity: the profile saw the step (the smallest case, smollm2 at 1 × 256 with attention
        // as one host op, holds ~36 MiB; 50+ with tfjs's composition).
        assert.ok(measured > 20 * 2 ** 20, `a real step holds real memory (${measured} B)`);
        assert.ok(planned >= measured, `plan ${planned} B under-estimates the measured peak ${measured} B`);
        assert.ok(planned <= 4 * measured, `plan ${planned} B is more than 4x the measured peak ${measured} B`);
      } finally {
        optimizer.dispose();
        disposeLora(lora);
        model.dispose();
      }
    });
  }
});

/** A real model's shape as a Q8_0 file of it would have (34 bytes per 32 weights), without a file. */
function shapeOf(id: string): ModelFootprint {
  const real = findShape(id)!;
  const config = configOfShape(real);
  const layer = footprintFromConfig(config, 1).layerElements;
  const weights = config.nLayer * layer + config.nEmbd * config.nVocab;
  return footprintFromConfig(config, Math.round((weights * 34) / 32));
}

describe("memory plan decisions", () => {
  test("a small model stays resident; a 0.5B shape on wasm streams its blocks; a 1.7B shape streams and lowers the context", () => {
    const smol = planMemory({ shape: shapeOf("smollm2-135m"), backend: wasm, hostAvailableBytes: 16 * GiB, rank: 16, maxContext: 1024, batchSize: 8 });
    assert.equal(smol.fits, true);
    assert.deepEqual(smol.placement, { layers: "device", head: "device" }, smol.summary);
    const qwen05 = planMemory({ shape: shapeOf("qwen2.5-0.5b"), backend: wasm, hostAvailableBytes: 16 * GiB, rank: 16, maxContext: 1024, batchSize: 16 });
    assert.equal(qwen05.fits, true, qwen05.summary);
    assert.notEqual(qwen05.placement.layers, "device", "2 x 1.4 GiB of f32 blocks (with XNNPACK's copies) do not fit next to the activations in 4 GiB");
    assert.ok(qwen05.needDeviceBytes <= wasm.deviceBytes!);
    assert.ok(qwen05.microBatchTokens >= 1024, "at least one whole sequence per micro-batch");
    const qwen17 = planMemory({ shape: shapeOf("qwen3-1.7b"), backend: wasm, hostAvailableBytes: 16 * GiB, rank: 16, maxContext: 4096, batchSize: 16 });
    assert.equal(qwen17.fits, true, qwen17.summary);
    assert.ok(qwen17.maxContext < 4096 && qwen17.maxContext >= 256, `context lowered to what fits (${qwen17.maxContext})`);
    assert.match(qwen17.summary, /training context limited to \d+ tokens by memory \(asked 4096\)/);
    // Less RAM: the f32 host copies no longer fit, the packed file data does.
    const lean = planMemory({ shape: shapeOf("qwen3-1.7b"), backend: wasm, hostAvailableBytes: 6 * GiB, rank: 16, maxContext: 512, batchSize: 16 });
    assert.equal(lean.fits, true, lean.summary);
    assert.deepEqual(lean.placement, { layers: "host-packed", head: "host-packed" }, lean.summary);
  });

  test("with native products the weights stay in RAM: host placements, no weight on the backend, more room for activations", () => {
    const ask = (hostProducts: boolean) =>
      planMemory({
        shape: shapeOf("smollm2-135m"),
        backend: { ...wasm, hostProducts },
        hostAvailableBytes: 16 * GiB,
        rank: 16,
        maxContext: 1024,
        batchSize: 16,
      });
    const native = ask(true);
    const wasmOwn = ask(false);
    assert.deepEqual(wasmOwn.placement, { layers: "device", head: "device" }, wasmOwn.summary);
    assert.deepEqual(native.placement, { layers: "host-f32", head: "host-f32" }, native.summary);
    const weightParts = native.device.filter((p) => /frozen blocks|streamed block|output projection|vocabulary slice/.test(p.what));
    assert.equal(weightParts.length, 2, native.device.map((p) => p.what).join("; "));
    for (const p of weightParts) assert.equal(p.bytes, 0, p.what);
    // The room goes to a larger micro-batch, or to more kept blocks at the same one.
    const room = `micro-batch ${native.microBatchTokens} vs ${wasmOwn.microBatchTokens}, kept ${native.keptBlocks} vs ${wasmOwn.keptBlocks}`;
    assert.ok(
      native.microBatchTokens > wasmOwn.microBatchTokens || (native.microBatchTokens === wasmOwn.microBatchTokens && native.keptBlocks >= wasmOwn.keptBlocks),
      room,
    );
    assert.ok(
      native.host.some((p) => p.what === "frozen blocks (f32, streamed)" && p.bytes > 0),
      "the weights are counted in RAM instead",
    );
  });

  test("kept activations: as many blocks as fit beside the placement and the micro-batch, none when asked", () => {
    const ask = (deviceBytes: number, keepActivations?: boolean) =>
      planMemory({
        shape: shapeOf("smollm2-135m"),
        backend: { ...wasm, deviceBytes },
        hostAvailableBytes: 16 * GiB,
        rank: 16,
        maxContext: 128,
        batchSize: 1,
        keepActivations,
      });
    const roomy = ask(wasm.deviceBytes!);
    assert.equal(roomy.keptBlocks, 30, roomy.summary);
    assert.match(roomy.summary, /activations kept for 30 of 30 blocks;/);
    assert.equal(ask(wasm.deviceBytes!, false).keptBlocks, 0);
    assert.match(ask(wasm.deviceBytes!, false).summary, /activations kept for 0 of 30 blocks \(the rest recomputed in the backward/);
    // Less memory: the same placement, fewer blocks kept, the plan still within what is there.
    const tight = ask(2 * GiB);
    assert.equal(tight.fits, true, tight.summary);
    assert.deepEqual(tight.placement, roomy.placement);
    assert.ok(tight.keptBlocks > 0 && tight.keptBlocks < 30, tight.summary);
    assert.ok(tight.needDeviceBytes <= 2 * GiB);
    // The 0.5B shape on wasm streams its blocks and keeps every block's activations at 1 x 128.
    const q = planMemory({ shape: shapeOf("qwen2.5-0.5b"), backend: wasm, hostAvailableBytes: 16 * GiB, rank: 16, maxContext: 128, batchSize: 1 });
    assert.equal(q.keptBlocks, 24, q.summary);
  });

  test("a model that cannot fit is refused with needed vs available and what would fit", () => {
    const p = planMemory({ shape: shapeOf("qwen3-4b"), backend: wasm, hostAvailableBytes: 3 * GiB, rank: 16, maxContext: 2048, batchSize: 16 });
    assert.equal(p.fits, false);
    assert.ok(p.needHostBytes > p.availableHostBytes);
    assert.match(
      p.summary,
      /^cannot train qwen3 \(36 layers, dim 2560, vocab 151936\) on wasm: at a context of 2048 tokens it needs .* of RAM, 3\.00 GiB available/,
    );
    // A GPU whose memory WebGPU does not report: only RAM and the largest buffer bind it.
    const gpu = planMemory({
      shape: shapeOf("qwen3-4b"),
      backend: { name: "webgpu", sharesHostMemory: false, maxTensorBytes: 128 * 2 ** 20 },
      hostAvailableBytes: 32 * GiB,
      rank: 16,
      maxContext: 2048,
      batchSize: 16,
    });
    assert.equal(gpu.fits, true, gpu.summary);
    assert.ok(gpu.headChunkRows * 2560 * 4 <= 128 * 2 ** 20, "vocabulary slices fit the largest buffer the adapter binds");
  });

  test("CLAWRL_TRAINER_RAM_LIMIT caps the RAM the plan uses; a bad value is an error", () => {
    assert.equal(parseByteSize("512M"), 512 * 2 ** 20);
    assert.equal(parseByteSize("2G"), 2 * GiB);
    assert.equal(parseByteSize("1.5GiB"), 1.5 * GiB);
    assert.equal(parseByteSize(undefined), null);
    assert.throws(() => parseByteSize("lots"), /CLAWRL_TRAINER_RAM_LIMIT: 'lots' is not a size/);
    assert.equal(hostAvailableBytes({ CLAWRL_TRAINER_RAM_LIMIT: "100M" }), 100 * 2 ** 20);
    assert.ok(hostAvailableBytes({}) > 100 * 2 ** 20);
  });

  test("clawrl train refuses a model that does not fit, before loading it: exit code 1, needed vs available", () => {
    const dir = tempDir();
    const data = path.join(dir, "data.jsonl");
    fs.writeFileSync(data, JSON.stringify({ messages: [{ role: "user", content: "Hi" }], response: "Hello.", reward: 1 }) + "\n");
    const model = ensureShapeModel("qwen3-1.7b", "q8_0", { layers: 1 });
    const t0 = Date.now();
    const r = runCli(["train", "--model", model, "--data", data, "--out", path.join(dir, "out"), "--backend", "wasm", "--steps", "1"], {
      CLAWRL_TRAINER_RAM_LIMIT: "600M",
    });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /cannot train qwen3 \(1 layers, dim 2048, vocab 151936\) on wasm: at a context of 2048 tokens it needs .*[\d.]+ GiB of RAM, 600 MiB available/,
    );
    assert.doesNotMatch(r.stderr + r.stdout, /Aborted\(\)|RangeError/);
    assert.ok(Date.now() - t0 < 60_000, "refused within a minute");
    assert.equal(fs.existsSync(path.join(dir, "out")), false, "nothing written");
  });
});
