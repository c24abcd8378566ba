/**
 * The default served context on the CPU (electron/core/inference/contextSize.ts): the trained
 * context as far as the KV caches of two contexts (an adapter swap's) fit 30% of RAM, never
 * below 4,096 tokens; fewer conversations at once before less than an agent's 16k.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultServingContext, defaultServingShape, kvBytesPerToken } from "../../electron/core/inference/contextSize.js";
import { serveMemoryOf } from "../../models/catalog.js";
import type { GgufFile } from "../../models/gguf/reader.js";
import { kvCacheBytesPerToken } from "../../models/gguf/summary.js";
import { GgufValueType, type GgufMetaValue } from "../../models/gguf/types.js";
import { tinyModel } from "../helpers/models.js";

const GiB = 2 ** 30;

describe("the default served context on the CPU", () => {
  it("keeps the KV caches of two contexts (a swap's) to 30% of RAM: the Qwen3-1.7B shape on 24 GiB gets 2 × 16,384 of its 40,960 tokens, a 0.5B 4 × its full 32,768", () => {
    const qwen3 = 28 * 8 * 256 * 2; // 28 layers × 8 KV heads × (128 + 128) × 2 bytes = 114,688 bytes a token
    const qwen25 = 24 * 2 * 128 * 2; // 24 layers × 2 KV heads × (64 + 64) × 2 = 12,288
    // Per sequence count: 0.3 × 24 GiB over 2 contexts × 4 sequences × 114,688 bytes → 8,424 → 8,192.
    assert.equal(defaultServingContext(40960, qwen3, 4, 24 * GiB), 8192);
    assert.equal(defaultServingContext(40960, qwen3, 2, 24 * GiB), 16384);
    assert.equal(defaultServingContext(32768, qwen25, 4, 24 * GiB), 32768);
    // Never below the floor, never above the trained context; without the shape, node-llama-cpp's fit alone.
    assert.equal(defaultServingContext(40960, qwen3, 4, 4 * GiB), 4096);
    assert.equal(defaultServingContext(2048, qwen3, 4, 4 * GiB), 2048);
    assert.equal(defaultServingContext(40960, null, 4, 24 * GiB), 40960);
    // The shape: an agent's 16k context before a 4th conversation at once.
    assert.deepEqual(defaultServingShape(40960, qwen3, 4, 24 * GiB), { contextSize: 16384, sequences: 2 });
    assert.deepEqual(defaultServingShape(32768, qwen25, 4, 24 * GiB), { contextSize: 32768, sequences: 4 });
    assert.deepEqual(defaultServingShape(40960, qwen3, 4, 64 * GiB), { contextSize: 21504, sequences: 4 });
    // Where not even 2 sequences reach 16k, all 4 are served at what fits.
    assert.deepEqual(defaultServingShape(40960, qwen3, 4, 8 * GiB), { contextSize: 4096, sequences: 4 });
    // A model trained on less than 16k needs no fewer sequences to be served whole.
    assert.deepEqual(defaultServingShape(8192, qwen3, 4, 24 * GiB), { contextSize: 8192, sequences: 4 });
    assert.deepEqual(defaultServingShape(40960, qwen3, 1, 24 * GiB), { contextSize: 32768, sequences: 1 });
  });

  it("reads the KV size a token from the GGUF header", async () => {
    // The tiny qwen2: 2 layers, dim 64, 4 heads (2 KV): 2 × 2 × (16 + 16) × 2 bytes.
    const model = await tinyModel({ arch: "qwen2" });
    assert.equal(kvBytesPerToken(model), 2 * 2 * 32 * 2);
    assert.equal(kvBytesPerToken("/nonexistent.gguf"), null);
  });

  it("counts heads wider than embedding/heads (Qwen3's key_length): one formula for the context policy and the serve estimate", () => {
    const header = (meta: Record<string, number>): GgufFile =>
      ({
        path: "mem.gguf",
        metadata: new Map<string, GgufMetaValue>([
          ["general.architecture", { type: GgufValueType.STRING, value: "qwen3" }],
          ...Object.entries(meta).map(([k, v]): [string, GgufMetaValue] => [`qwen3.${k}`, { type: GgufValueType.UINT32, value: v }]),
        ]),
        tensors: [],
      }) as unknown as GgufFile; // a header in memory: only the metadata is read
    // Qwen3-0.6B: 28 layers, embedding 1024, 16 heads (8 KV) of 128, not 1024 / 16 = 64.
    const qwen3 = header({
      block_count: 28,
      embedding_length: 1024,
      "attention.head_count": 16,
      "attention.head_count_kv": 8,
      "attention.key_length": 128,
      "attention.value_length": 128,
    });
    assert.equal(kvCacheBytesPerToken(qwen3), 28 * 8 * (128 + 128) * 2);
    // Without key_length the head is embedding/heads; without the KV count, every head.
    assert.equal(kvCacheBytesPerToken(header({ block_count: 2, embedding_length: 64, "attention.head_count": 4 })), 2 * 4 * 32 * 2);
    assert.equal(kvCacheBytesPerToken(header({ embedding_length: 64, "attention.head_count": 4 })), null);
    // The serve estimate is the weights, 4,096 tokens of that cache and 256 MiB of buffers.
    assert.equal(serveMemoryOf(GiB, 28 * 8 * 256 * 2), GiB + 28 * 8 * 256 * 2 * 4096 + 256 * 2 ** 20);
    assert.equal(serveMemoryOf(GiB, null), Math.round(GiB * 1.15 + 256 * 2 ** 20));
  });
});
