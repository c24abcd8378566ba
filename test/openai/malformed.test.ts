import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { startTinyCore, turnCount } from "./helpers.js";

const ok = { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 2 };
const msg = (m: unknown) => ({ ...ok, messages: [m] });

/** Bodies that must each get a 400 (JSON, field-level problems). */
function badBodies(): unknown[] {
  const out: unknown[] = [
    null,
    5,
    "text",
    [],
    [ok],
    true,
    {},
    { model: "m" },
    { ...ok, messages: [] },
    { ...ok, messages: "hi" },
    { ...ok, messages: {} },
    { ...ok, messages: null },
    msg({ content: "x" }),
    msg({ role: "bogus", content: "x" }),
    msg({ role: "function", content: "x" }),
    msg({ role: "USER", content: "x" }),
    msg({ role: "user" }),
    msg({ role: "user", content: 5 }),
    msg({ role: "user", content: { text: "x" } }),
    msg({ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }),
    msg({ role: "user", content: [{ type: "text" }] }),
    msg({ role: "user", content: [{ type: "text", text: 3 }] }),
    msg({ role: "user", content: "x", extra: 1 }),
    msg({ role: "tool", content: "x" }),
    msg({ role: "tool", content: "x", tool_call_id: "" }),
    msg({ role: "system", content: null }),
    msg({ role: "assistant", content: "x", tool_calls: [{ id: "a", type: "function", function: { name: "f" } }] }),
    msg({ role: "assistant", content: "x", tool_calls: "none" }),
    msg(null),
    msg("hi"),
    msg(3),
    { ...ok, tools: [{ type: "function", function: { name: "bad name!" } }] },
    { ...ok, tools: [{ type: "retrieval" }] },
    { ...ok, tools: {} },
    { ...ok, tool_choice: "sometimes" },
    { ...ok, tool_choice: "required" },
    { ...ok, tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "g" } } },
    { ...ok, top_logprobs: 3 },
    { ...ok, logprobs: true, top_logprobs: 21 },
    { ...ok, logprobs: "yes" },
    { ...ok, stream: "yes" },
    { ...ok, stream_options: { include_usage: "y" } },
    { ...ok, stream_options: { other: true } },
    { ...ok, stop: 5 },
    { ...ok, stop: ["a", "b", "c", "d", "e"] },
    { ...ok, stop: [1] },
    { ...ok, foo: 1 },
    { ...ok, functions: [] },
    { ...ok, function_call: "auto" },
    { ...ok, response_format: { type: "xml" } },
    { ...ok, logit_bias: { x: 2 } },
    { ...ok, logit_bias: { "1": 200 } },
    { ...ok, logit_bias: { "99999999": 1 } },
    { ...ok, frequency_penalty: 2.5 },
    { ...ok, presence_penalty: -3 },
    { ...ok, response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "a" } } } },
    { ...ok, top_k: -1 },
    { ...ok, min_p: 2 },
    { ...ok, repeat_penalty: 0 },
    { ...ok, model: 5 },
    { ...ok, user: 5 },
    { ...ok, metadata: { a: 1 } },
  ];
  // Every numeric field with wrong types and out-of-range values.
  const numeric: Record<string, unknown[]> = {
    temperature: ["hot", -0.1, 2.5, [], {}, true],
    top_p: ["x", -1, 1.5, {}],
    max_tokens: ["10", 0, -1, 1.5, {}, [1]],
    max_completion_tokens: ["10", 0, -5, 2.5],
    seed: ["x", 1.5, {}],
    n: [2, 0, 3, "1", 1.5],
    top_logprobs: [-1, 1.5, "2"],
  };
  for (const [k, vals] of Object.entries(numeric)) for (const v of vals) out.push({ ...ok, logprobs: k === "top_logprobs" ? true : undefined, [k]: v });
  // Unknown fields, many names.
  for (let i = 0; i < 60; i++) out.push({ ...ok, [`unknown_field_${i}`]: i });
  // Unknown roles and wrong content in every message position.
  for (let i = 0; i < 40; i++) {
    const messages: unknown[] = [
      { role: "system", content: "s" },
      { role: "user", content: "u" },
      { role: "assistant", content: "a" },
      { role: "user", content: "u2" },
    ];
    messages[i % 4] = i % 2 ? { role: `role${i}`, content: "x" } : { role: (messages[i % 4] as { role: string }).role, content: i };
    out.push({ ...ok, messages });
  }
  return out;
}

const badJson = [
  "{",
  '{"messages": [',
  "{'messages': []}",
  "[1,",
  "nul",
  '{"a":1,}',
  '"unterminated',
  '{"messages":[{"role":"user","content":"x"}]',
  "}{",
  '{"x": tru}',
];

describe("malformed requests", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore({}, { bodyLimit: 256 * 1024 }));
  });
  after(async () => {
    await core?.close();
  });

  async function expectError(res: Response, status: number | ((s: number) => boolean), what: string) {
    const text = await res.text();
    const okStatus = typeof status === "number" ? res.status === status : status(res.status);
    assert.ok(okStatus, `${what}: got ${res.status} ${text.slice(0, 200)}`);
    const body = JSON.parse(text) as { error?: { message?: unknown; type?: unknown; param?: unknown; code?: unknown } };
    assert.equal(typeof body.error?.message, "string", `${what}: ${text.slice(0, 200)}`);
    assert.ok((body.error!.message as string).length > 0);
    assert.equal(typeof body.error?.type, "string");
    assert.ok("param" in body.error! && "code" in body.error);
    return body.error;
  }

  it("answers a few hundred malformed requests with OpenAI-style 4xx errors, records nothing, then serves a normal one", async () => {
    const before = turnCount(core);
    const post = (body: string, headers: Record<string, string> = {}, path = "/v1/chat/completions") =>
      fetch(`${core.url}${path}`, { method: "POST", body, headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json", ...headers } });
    let count = 0;

    for (const b of badBodies()) {
      const e = await expectError(await post(JSON.stringify(b)), 400, JSON.stringify(b).slice(0, 120));
      count++;
      if (b && typeof b === "object" && !Array.isArray(b) && "unknown_field_3" in b) assert.equal(e.param, "unknown_field_3");
      if (b && typeof b === "object" && (b as { n?: unknown }).n === 2) assert.equal(e.param, "n");
    }
    for (const j of badJson) {
      await expectError(await post(j), 400, j);
      count++;
    }
    // Bad rl headers are rejected before anything is recorded.
    await expectError(await post(JSON.stringify(ok), { "x-turn-type": "sometimes" }), 400, "bad X-Turn-Type");
    // Oversized body.
    await expectError(await post(JSON.stringify({ ...ok, messages: [{ role: "user", content: "x".repeat(300 * 1024) }] })), 413, "oversized");
    // A prompt longer than the context.
    const e = await expectError(await post(JSON.stringify({ ...ok, messages: [{ role: "user", content: "lorem ipsum ".repeat(2000) }] })), 400, "too long");
    assert.equal(e.code, "context_length_exceeded");
    // Wrong content type, no token, unknown routes and methods.
    await expectError(await post("messages=x", { "content-type": "application/x-www-form-urlencoded" }), (s) => s === 415 || s === 400, "form body");
    await expectError(
      await fetch(`${core.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify(ok), headers: { "content-type": "application/json" } }),
      401,
      "no token",
    );
    for (const p of ["/v1/nope", "/v1/chat/completion", "/v1/images/generations", "/v1/chat/completions/x", "/v2/chat/completions"]) {
      await expectError(await post(JSON.stringify(ok), {}, p), 404, p);
      count++;
    }
    await expectError(await fetch(`${core.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${core.token}` } }), 404, "GET completions");
    await expectError(await fetch(`${core.url}/v1/models/nope`, { headers: { authorization: `Bearer ${core.token}` } }), 404, "unknown model");
    count += 8;
    assert.ok(count >= 200, `only ${count} malformed requests`);

    assert.equal(turnCount(core), before, "a malformed request was recorded");
    const r = await client.chat.completions.create({ model: modelId, messages: [{ role: "user", content: "still there?" }], max_tokens: 4 });
    assert.equal(r.choices[0].message.role, "assistant");
    assert.equal(turnCount(core), before + 1);
  });
});

describe("client disconnect mid-stream", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    // One sequence: if the aborted generation kept its slot, the next request would wait for it.
    ({ core, client, modelId } = await startTinyCore({ sequences: 1 }));
  });
  after(async () => {
    await core?.close();
  });

  it("stops the generation, frees the slot and records nothing for the aborted turn", async () => {
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: "user", content: "Write a long story" }];
    // A seed whose answer runs to the token limit (random weights may emit end-of-text early).
    let seed = 0;
    for (let s = 1; s <= 30 && !seed; s++) {
      const r = await client.chat.completions.create({ model: modelId, messages, max_tokens: 300, seed: s });
      if (r.choices[0].finish_reason === "length") seed = s;
    }
    assert.ok(seed > 0, "no seed ran to the limit");
    const before = turnCount(core);

    const ac = new AbortController();
    const stream = await client.chat.completions.create({ model: modelId, messages, max_tokens: 900, seed, stream: true }, { signal: ac.signal });
    let got = 0;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) got++;
        if (got === 3) {
          ac.abort();
          break;
        }
      }
    } catch (err) {
      // the client may surface its own abort as an error
      assert.equal((err as Error).name, "APIUserAbortError");
    }
    assert.equal(got, 3);
    // Greedy: an unseeded sample from random weights ends early now and then (an end token drawn).
    const r = await client.chat.completions.create({ model: modelId, messages: [{ role: "user", content: "next" }], max_tokens: 3, temperature: 0 });
    assert.equal(r.usage!.completion_tokens, 3);
    assert.equal(turnCount(core), before + 1, "the aborted turn was recorded (or the next one was not)");
    assert.equal(core.engine!.gate.inflight, 0);
  });
});
