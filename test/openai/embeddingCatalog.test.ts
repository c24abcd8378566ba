import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { loadCatalog, loadEmbeddingCatalog, recommendModel } from "../../models/catalog.js";
import { resolveModelSource } from "../../models/hfSource.js";

describe("the catalog's embedding models", () => {
  it("are listed apart from the chat models, download by id through the catalog's source, and are never recommended for chat", () => {
    const emb = loadEmbeddingCatalog();
    assert.ok(emb.length >= 2);
    const chatIds = new Set(loadCatalog().map((m) => m.id));
    for (const e of emb) {
      assert.ok(!chatIds.has(e.id), e.id);
      assert.ok(e.dimensions > 0 && e.sizeBytes > 1e6);
      const src = resolveModelSource(e.id, { HF_ENDPOINT: "http://hub.test" });
      assert.equal(src.url, `http://hub.test/${e.repo}/resolve/main/${e.file}`);
      assert.equal(src.catalog?.name, e.name);
    }
    assert.ok(emb.some((e) => e.id === "nomic-embed-text-v1.5"));
    const rec = recommendModel({ ramBytes: 64 * 2 ** 30, vramBytes: 0, planTraining: () => null });
    assert.ok(chatIds.has(rec.entry.id));
  });
});
