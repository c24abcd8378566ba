import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import { OpenAIEmbeddings } from "@langchain/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { embedMany } from "ai";
import type { RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { startTinyCore } from "./helpers.js";

const dot = (a: readonly number[], b: readonly number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
const norm = (a: readonly number[]) => Math.sqrt(dot(a, a));

describe("POST /v1/embeddings with the real clients", () => {
  let core: RunningCore;
  let client: OpenAI;
  let model: string;
  before(async () => {
    ({ core, client, modelId: model } = await startTinyCore());
  });
  after(async () => {
    await core?.close();
  });

  it("openai-node: a batch, one unit vector per input in order; identical inputs identical, different ones different", async () => {
    const input = ["the cat sat on the mat", "a dog ran in the park", "the cat sat on the mat"];
    const r = await client.embeddings.create({ model, input, encoding_format: "float" });
    assert.equal(r.object, "list");
    assert.equal(r.model, model);
    assert.equal(r.data.length, 3);
    assert.deepEqual(
      r.data.map((d) => d.index),
      [0, 1, 2],
    );
    const [a, b, c] = r.data.map((d) => d.embedding);
    assert.ok(a.length > 8, `width ${a.length}`);
    assert.ok(a.every(Number.isFinite));
    assert.ok(Math.abs(norm(a) - 1) < 1e-4 && Math.abs(norm(b) - 1) < 1e-4);
    assert.deepEqual(a, c, "identical inputs give identical vectors");
    assert.ok(dot(a, b) < 0.9999, "different inputs give different vectors");
    assert.ok(r.usage.prompt_tokens > 6 && r.usage.total_tokens === r.usage.prompt_tokens);
    // The same text alone, in another request, gives the same vector as inside the batch.
    const alone = await client.embeddings.create({ model, input: input[1], encoding_format: "float" });
    assert.deepEqual(alone.data[0].embedding, b);
  });

  it("openai-node: base64 (its default) decodes to the float vectors; dimensions truncates and renormalises", async () => {
    const input = ["hello world", "good night"];
    const floats = await client.embeddings.create({ model, input, encoding_format: "float" });
    // openai-node asks for base64 when no format is given and decodes it itself.
    const decoded = await client.embeddings.create({ model, input });
    for (let i = 0; i < 2; i++) {
      const f = floats.data[i].embedding;
      const d = decoded.data[i].embedding;
      assert.equal(d.length, f.length);
      f.forEach((x, j) => assert.equal(Math.fround(x), d[j]));
    }
    // base64 on the wire, as sent: little-endian float32.
    const raw = await callApi(core, "POST", "/v1/embeddings", { input: "hello world", encoding_format: "base64" });
    assert.equal(raw.status, 200);
    const bytes = Buffer.from(raw.body.data[0].embedding as string, "base64");
    assert.equal(bytes.length, 4 * floats.data[0].embedding.length);
    assert.equal(bytes.readFloatLE(0), Math.fround(floats.data[0].embedding[0]));
    const short = await client.embeddings.create({ model, input, dimensions: 4, encoding_format: "float" });
    const s = short.data[0].embedding;
    assert.equal(s.length, 4);
    assert.ok(Math.abs(norm(s) - 1) < 1e-5);
    const f4 = floats.data[0].embedding.slice(0, 4);
    s.forEach((x, j) => assert.ok(Math.abs(x - f4[j] / norm(f4)) < 1e-5));
  });

  it("token-id input embeds as its text does; bad requests are OpenAI-style 400s", async () => {
    const text = await callApi(core, "POST", "/v1/embeddings", { input: ["hello world"] });
    const ids = core.engine!.model.tokenize("hello world", false);
    const tokens = await callApi(core, "POST", "/v1/embeddings", { input: [ids, ids] });
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    assert.equal(tokens.body.data.length, 2);
    assert.deepEqual(tokens.body.data[0].embedding, text.body.data[0].embedding);
    const one = await callApi(core, "POST", "/v1/embeddings", { input: ids });
    assert.equal(one.body.data.length, 1);
    for (const [body, param] of [
      [{ input: "x", bogus: 1 }, "bogus"],
      [{ input: [] }, "input"],
      [{ input: "" }, "input"],
      [{ input: "x", encoding_format: "int8" }, "encoding_format"],
      [{ input: "x", dimensions: 100_000 }, "dimensions"],
      [{ input: [[1, 2], [99_999_999]] }, "input"],
    ] as const) {
      const r = await callApi(core, "POST", "/v1/embeddings", body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.type, "invalid_request_error");
      assert.equal(r.body.error.param, param, JSON.stringify(r.body));
    }
    const long = await callApi(core, "POST", "/v1/embeddings", { input: "word ".repeat(5000) });
    assert.equal(long.status, 400);
    assert.equal(long.body.error.code, "context_length_exceeded");
  });

  it("runs in a context of its own: a chat's cached prompt survives embeddings in between", async () => {
    const messages = [{ role: "user" as const, content: "a fairly long question about cats and dogs and their habits" }];
    await client.chat.completions.create({ model, messages, max_tokens: 2, temperature: 0 });
    const again = await client.chat.completions.create({ model, messages, max_tokens: 2, temperature: 0 });
    const cached = again.usage!.prompt_tokens_details!.cached_tokens!;
    assert.ok(cached > 0, "the repeated prompt reuses the KV cache");
    await client.embeddings.create({ model, input: Array.from({ length: 8 }, (_, i) => `text number ${i} about something else entirely`) });
    const after = await client.chat.completions.create({ model, messages, max_tokens: 2, temperature: 0 });
    assert.equal(after.usage!.prompt_tokens_details!.cached_tokens, cached, "the embeddings did not take the chat's sequence");
    // and concurrent requests both complete
    const [e, c] = await Promise.all([
      client.embeddings.create({ model, input: ["x y z", "u v w"], encoding_format: "float" }),
      client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
    ]);
    assert.equal(e.data.length, 2);
    assert.ok(c.choices[0].message);
  });

  it("LangChain OpenAIEmbeddings: embedDocuments and embedQuery agree", async () => {
    const emb = new OpenAIEmbeddings({ model, apiKey: core.token, configuration: { baseURL: `${core.url}/v1` }, maxRetries: 0 });
    const docs = await emb.embedDocuments(["alpha beta", "gamma delta", "alpha beta"]);
    assert.equal(docs.length, 3);
    assert.deepEqual(docs[0], docs[2]);
    assert.notDeepEqual(docs[0], docs[1]);
    const q = await emb.embedQuery("gamma delta");
    assert.equal(q.length, docs[1].length);
    q.forEach((x, i) => assert.ok(Math.abs(x - docs[1][i]) < 1e-6));
  });

  it("the AI SDK: embedMany through createOpenAICompatible", async () => {
    const provider = createOpenAICompatible({ name: "clawrl", baseURL: `${core.url}/v1`, apiKey: core.token });
    const { embeddings, usage } = await embedMany({ model: provider.embeddingModel(model), values: ["one", "two", "one"], maxRetries: 0 });
    assert.equal(embeddings.length, 3);
    assert.deepEqual(embeddings[0], embeddings[2]);
    assert.notDeepEqual(embeddings[0], embeddings[1]);
    assert.ok(usage.tokens > 0);
  });
});
