import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { loadCatalog, recommendModel } from "../../models/catalog.js";
import { resolveModelSource } from "../../models/hfSource.js";

const GiB = 2 ** 30;

describe("model catalog", () => {
  it("lists only trainable architectures with the facts the UI needs", () => {
    const c = loadCatalog();
    assert.ok(c.length >= 6);
    for (const m of c) {
      assert.ok(["llama", "qwen2", "qwen3"].includes(m.architecture), m.id);
      assert.ok(m.trainMemoryBytes > m.serveMemoryBytes * 0.5, m.id);
    }
  });

  it("recommends a bigger model for a bigger machine, and the smallest for a small one", () => {
    const small = recommendModel({ ramBytes: 4 * GiB, vramBytes: 0 }).entry;
    const mid = recommendModel({ ramBytes: 16 * GiB, vramBytes: 0 }).entry;
    const big = recommendModel({ ramBytes: 64 * GiB, vramBytes: 24 * GiB }).entry;
    assert.ok(small.parameters < mid.parameters, `${small.id} < ${mid.id}`);
    assert.ok(mid.parameters < big.parameters, `${mid.id} < ${big.id}`);
    assert.equal(recommendModel({ ramBytes: 1 * GiB, vramBytes: 0 }).entry.id, [...loadCatalog()].sort((a, b) => a.parameters - b.parameters)[0].id);
  });

  it("resolves catalog ids and hf: references on HF_ENDPOINT", () => {
    const env = { HF_ENDPOINT: "http://mirror.local:9/" };
    const s = resolveModelSource("qwen2.5-0.5b-instruct", env);
    assert.equal(s.url, "http://mirror.local:9/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf");
    const h = resolveModelSource("hf:me/repo@v2/sub/dir/m.gguf", env);
    assert.equal(h.url, "http://mirror.local:9/me/repo/resolve/v2/sub/dir/m.gguf");
    assert.throws(() => resolveModelSource("hf:me/repo/../x.gguf", env), /bad file path/);
    assert.throws(() => resolveModelSource("hf:nope", env), /not a Hugging Face file reference/);
    assert.throws(() => resolveModelSource("mystery", env), /unknown model 'mystery'/);
  });
});
