import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTinyCore } from "./helpers.js";

describe("answer length without max_tokens", () => {
  let t: Awaited<ReturnType<typeof startTinyCore>>;
  before(async () => {
    t = await startTinyCore();
  });
  after(() => t.core.close());

  it("stops at the defaultMaxTokens setting when the request sets no limit, and a request's own limit wins", async () => {
    const patch = await fetch(`${t.core.url}/api/settings`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${t.core.token}`, "content-type": "application/json" },
      body: JSON.stringify({ defaultMaxTokens: 5 }),
    });
    assert.equal(patch.status, 200);
    const messages = [{ role: "user" as const, content: "Tell me a long story." }];
    // Random weights rarely emit the end token, so without a bound this would run to the context's end.
    // Greedy: which tokens a seed samples is the sampler's business (seed 1 once drew an end token first).
    const bounded = await t.client.chat.completions.create({ model: t.modelId, messages, temperature: 0 });
    assert.equal(bounded.usage?.completion_tokens, 5);
    assert.equal(bounded.choices[0].finish_reason, "length");
    const own = await t.client.chat.completions.create({ model: t.modelId, messages, temperature: 0, max_tokens: 9 });
    assert.equal(own.usage?.completion_tokens, 9);
  });
});
