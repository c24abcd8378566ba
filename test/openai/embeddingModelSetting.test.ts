import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { tinyModel } from "../helpers/models.js";
import { startTinyCore } from "./helpers.js";

// The settings' embedding GGUF (issue 28). A BERT-style embedding GGUF is not among the tiny
// models the project generates, so "another file" is a tiny llama model of another width (32,
// the served qwen2's is 64): which model answered shows in the reply's `model` and in the width.
describe("/v1/embeddings from the embedding GGUF chosen in the settings", () => {
  let core: RunningCore;
  let client: OpenAI;
  let served: string;
  let other: string;
  before(async () => {
    ({ core, client, modelId: served } = await startTinyCore());
    other = await tinyModel({ arch: "llama", dim: 32 });
  });
  after(async () => {
    await core?.close();
  });

  const width = async () => (await client.embeddings.create({ model: "any", input: "hello", encoding_format: "float" })).data[0].embedding.length;

  it("defaults to the served model; the setting routes requests to the other file, and null routes them back", async () => {
    assert.equal((await callApi(core, "GET", "/api/settings")).body.embeddingModelPath, null);
    const first = await client.embeddings.create({ model: "any", input: "hello", encoding_format: "float" });
    assert.equal(first.model, served);
    assert.equal(first.data[0].embedding.length, 64);

    const set = await callApi(core, "PATCH", "/api/settings", { embeddingModelPath: other });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const r = await client.embeddings.create({ model: "any", input: ["the cat sat", "a dog ran", "the cat sat"], encoding_format: "float" });
    assert.notEqual(r.model, served);
    assert.match(other, new RegExp(`${r.model}\\.gguf$`), "the reply names the embedding file");
    assert.equal(r.data.length, 3);
    const [a, b, c] = r.data.map((d) => d.embedding);
    assert.equal(a.length, 32);
    assert.deepEqual(a, c, "identical inputs give identical vectors");
    assert.notDeepEqual(a, b);
    assert.ok(Math.abs(Math.hypot(...a) - 1) < 1e-4);
    // The same text alone gives the vector it had in the batch; base64 (openai-node's default) decodes to the same floats.
    const alone = await client.embeddings.create({ model: "any", input: "a dog ran", encoding_format: "float" });
    assert.deepEqual(alone.data[0].embedding, b);
    const decoded = await client.embeddings.create({ model: "any", input: ["the cat sat", "a dog ran"] });
    decoded.data.forEach((d, i) => d.embedding.forEach((x, j) => assert.equal(x, Math.fround(r.data[i].embedding[j]))));

    // Chat still answers from the served model meanwhile, in parallel with embeddings of the other file.
    const [chat, emb] = await Promise.all([
      client.chat.completions.create({ model: served, messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
      client.embeddings.create({ model: "any", input: Array.from({ length: 6 }, (_, i) => `text ${i}`), encoding_format: "float" }),
    ]);
    assert.equal(chat.model, served);
    assert.equal(emb.data.length, 6);

    assert.equal((await callApi(core, "PATCH", "/api/settings", { embeddingModelPath: null })).status, 200);
    assert.equal(await width(), 64);
  });

  it("a file that cannot be loaded is a 503 naming the setting's file; a relative path is refused by the settings", async () => {
    const missing = `${other}.missing.gguf`;
    assert.equal((await callApi(core, "PATCH", "/api/settings", { embeddingModelPath: missing })).status, 200);
    const r = await callApi(core, "POST", "/v1/embeddings", { input: "hello" });
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.error.code, "embedding_model_unavailable");
    assert.ok(r.body.error.message.includes(missing), r.body.error.message);
    const rel = await callApi(core, "PATCH", "/api/settings", { embeddingModelPath: "models/x.gguf" });
    assert.equal(rel.status, 400);
    assert.match(rel.body.error?.message ?? JSON.stringify(rel.body), /embeddingModelPath/);
    // Back to a good file: loaded on the next request.
    assert.equal((await callApi(core, "PATCH", "/api/settings", { embeddingModelPath: other })).status, 200);
    assert.equal(await width(), 32);
    assert.equal((await callApi(core, "PATCH", "/api/settings", { embeddingModelPath: null })).status, 200);
  });
});
