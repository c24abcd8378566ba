import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { startTinyCore, turnCount } from "./helpers.js";
import type { LlamaTimings } from "../../electron/core/api/openai.js";

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
  { type: "function", function: { name: "list_files", description: "List files", parameters: { type: "object", properties: { dir: { type: "string" } } } } },
];

describe("/v1/chat/completions through the openai client", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore());
  });
  after(async () => {
    await core?.close();
  });

  it("lists the loaded model", async () => {
    const list = await client.models.list();
    assert.deepEqual(
      list.data.map((m) => m.id),
      [modelId],
    );
  });

  it("answers without streaming, with usage, X-Clawrl headers, and a recorded turn", async () => {
    const before = turnCount(core);
    const { data, response } = await client.chat.completions
      .create({
        model: modelId,
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Hello there" },
        ],
        max_tokens: 12,
        seed: 7,
      })
      .withResponse();
    const c = data.choices[0];
    assert.equal(c.message.role, "assistant");
    assert.equal(typeof c.message.content, "string");
    assert.ok(["stop", "length"].includes(c.finish_reason));
    assert.ok(data.usage!.prompt_tokens > 5);
    assert.ok(data.usage!.completion_tokens >= 1 && data.usage!.completion_tokens <= 12);
    assert.equal(data.usage!.total_tokens, data.usage!.prompt_tokens + data.usage!.completion_tokens);
    const turnId = response.headers.get("x-clawrl-turn-id");
    assert.ok(response.headers.get("x-clawrl-session-id"));
    assert.ok(turnId);
    assert.equal(response.headers.get("x-clawrl-adapter"), "base");
    assert.equal(data.id, `chatcmpl-${turnId}`);
    assert.equal(turnCount(core), before + 1);
    const rec = core.store.readTurn(turnId);
    assert.equal(rec.responseTokens.length, data.usage!.completion_tokens);
    assert.equal(rec.tokenLogprobs.length, rec.responseTokens.length);
    assert.equal(rec.promptTokens.length, data.usage!.prompt_tokens);
    assert.ok(rec.tokenLogprobs.every((lp) => Number.isFinite(lp) && lp <= 0));
    // How long it took, as llama-server says it: the prompt up to the first token, the tokens after it.
    const t = (data as unknown as { timings: LlamaTimings }).timings;
    assert.equal(t.prompt_n, data.usage!.prompt_tokens - data.usage!.prompt_tokens_details!.cached_tokens!);
    assert.equal(t.predicted_n, data.usage!.completion_tokens - 1);
    assert.ok(t.prompt_ms > 0 && t.predicted_ms >= 0, JSON.stringify(t));
    assert.ok(Math.abs(t.prompt_per_second! - (1000 * t.prompt_n) / t.prompt_ms) < 1e-6);
    // The turn keeps the same figures (the chat shows its speed when a session is opened again).
    assert.deepEqual(
      [rec.timings!.promptTokens, rec.timings!.firstTokenMs, rec.timings!.decodeTokens, rec.timings!.decodeMs],
      [t.prompt_n, t.prompt_ms, t.predicted_n, t.predicted_ms],
    );
    assert.ok(rec.timings!.queueMs >= 0);
    assert.deepEqual(core.store.turnView(turnId).timings, rec.timings);
  });

  it("streams token by token; the same seed gives the same answer as without streaming", async () => {
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: "user", content: "Tell me a story" }];
    const plain = await client.chat.completions.create({ model: modelId, messages, max_tokens: 24, seed: 42, temperature: 1 });
    const { data: stream, response } = await client.chat.completions
      .create({ model: modelId, messages, max_tokens: 24, seed: 42, temperature: 1, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    assert.ok(response.headers.get("x-clawrl-turn-id"));
    assert.equal(response.headers.get("x-clawrl-adapter"), "base");
    let text = "";
    let contentChunks = 0;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let timings: LlamaTimings | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const t = (chunk as unknown as { timings?: LlamaTimings }).timings;
      if (t) {
        assert.ok(chunk.choices[0]?.finish_reason, "the timings come with the finish reason");
        timings = t;
      }
      for (const ch of chunk.choices) {
        if (ch.delta.content) {
          text += ch.delta.content;
          contentChunks++;
        }
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    assert.equal(text, plain.choices[0].message.content);
    assert.equal(finish, plain.choices[0].finish_reason);
    assert.equal(usage?.prompt_tokens, plain.usage!.prompt_tokens);
    assert.equal(usage?.completion_tokens, plain.usage!.completion_tokens);
    assert.ok(contentChunks > 1, `expected several content chunks, got ${contentChunks}`);
    assert.equal(timings?.predicted_n, usage.completion_tokens - 1);
    assert.ok(timings.predicted_per_second! > 0);
  });

  it("honours stop sequences and max_completion_tokens", async () => {
    const base = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "go" }],
      max_completion_tokens: 30,
      seed: 3,
      temperature: 0,
    });
    const full = base.choices[0].message.content!;
    assert.ok(full.length > 4);
    const stop = full.slice(2, 4);
    const cut = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "go" }],
      max_completion_tokens: 30,
      seed: 3,
      temperature: 0,
      stop: [stop],
    });
    assert.equal(cut.choices[0].message.content, full.slice(0, full.indexOf(stop)));
    assert.equal(cut.choices[0].finish_reason, "stop");
    const short = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "go" }],
      max_completion_tokens: 3,
      temperature: 0,
    });
    assert.equal(short.usage!.completion_tokens, 3);
    assert.equal(short.choices[0].finish_reason, "length");
  });

  it("returns logprobs and top_logprobs, consistent with each other", async () => {
    const r = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 8,
      seed: 5,
      logprobs: true,
      top_logprobs: 3,
    });
    const lp = r.choices[0].logprobs!.content!;
    assert.equal(lp.length, r.usage!.completion_tokens);
    for (const e of lp) {
      assert.ok(e.logprob <= 0);
      assert.equal(e.top_logprobs.length, 3);
      assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob && e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob);
      // the sampled token can't beat the most likely one
      assert.ok(e.logprob <= e.top_logprobs[0].logprob + 1e-9);
    }
    const text = lp.map((e) => e.token).join("");
    assert.ok(text.startsWith(r.choices[0].message.content!.slice(0, 1)));
  });

  it("forces a named tool call: tool_calls with valid JSON arguments, finish_reason tool_calls", async () => {
    const r = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools,
      tool_choice: { type: "function", function: { name: "get_weather" } },
      seed: 11,
      max_tokens: 200,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, "tool_calls");
    assert.equal(c.message.tool_calls?.length, 1);
    const call = c.message.tool_calls[0];
    assert.equal(call.type, "function");
    assert.ok(call.type === "function" && call.function.name === "get_weather");
    assert.ok(call.id.startsWith("call_"));
    const args = JSON.parse(call.type === "function" ? call.function.arguments : "");
    assert.equal(typeof args, "object");
  });

  it("streams a required tool call as deltas that assemble into the same call shape", async () => {
    const stream = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "Which files?" }],
      tools,
      tool_choice: "required",
      parallel_tool_calls: false, // one call (several may come when allowed: clients.structured.test.ts)
      seed: 12,
      max_tokens: 200,
      stream: true,
    });
    const calls: Array<{ id?: string; name: string; args: string }> = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const ch of chunk.choices) {
        for (const d of ch.delta.tool_calls ?? []) {
          calls[d.index] ??= { name: "", args: "" };
          if (d.id) calls[d.index].id = d.id;
          calls[d.index].name += d.function?.name ?? "";
          calls[d.index].args += d.function?.arguments ?? "";
        }
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    assert.equal(finish, "tool_calls");
    assert.equal(calls.length, 1);
    assert.ok(calls[0].id?.startsWith("call_"));
    assert.ok(["get_weather", "list_files"].includes(calls[0].name), calls[0].name);
    assert.equal(typeof JSON.parse(calls[0].args), "object");
  });

  it("takes a conversation with tool calls and tool results (the agent's second request)", async () => {
    const r = await client.chat.completions.create({
      model: modelId,
      tools,
      messages: [
        { role: "system", content: "You are an agent." },
        { role: "user", content: "Weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
        },
        { role: "tool", tool_call_id: "call_1", content: "Sunny, 21 C" },
        {
          role: "user",
          content: [
            { type: "text", text: "Thanks! " },
            { type: "text", text: "And tomorrow?" },
          ],
        },
      ],
      max_tokens: 5,
    });
    assert.ok(r.usage!.prompt_tokens > 20);
    assert.equal(typeof r.choices[0].message.content, "string");
  });

  it("reuses the KV cache of the conversation so far on the next turn (usage.prompt_tokens_details.cached_tokens)", async () => {
    const system = { role: "system" as const, content: "You are a helpful agent. ".repeat(20) };
    const first = await client.chat.completions.create({
      model: modelId,
      messages: [system, { role: "user", content: "first question" }],
      max_tokens: 6,
      seed: 1,
    });
    const answer = first.choices[0].message.content!;
    const second = await client.chat.completions.create({
      model: modelId,
      messages: [system, { role: "user", content: "first question" }, { role: "assistant", content: answer }, { role: "user", content: "second question" }],
      max_tokens: 2,
    });
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    // at least the system prompt and first question (the template may re-render the answer's end differently)
    assert.ok(cached >= first.usage!.prompt_tokens - 2, `cached ${cached} of a ${first.usage!.prompt_tokens}-token shared prefix`);
    assert.ok(cached < second.usage!.prompt_tokens);
  });

  it("answers a prompt longer than the context with 400 context_length_exceeded", async () => {
    const before = turnCount(core);
    const long = "word ".repeat(3000);
    await assert.rejects(
      client.chat.completions.create({ model: modelId, messages: [{ role: "user", content: long }] }),
      (err: { status?: number; code?: string | null; param?: string | null }) =>
        err.status === 400 && err.code === "context_length_exceeded" && err.param === "messages",
    );
    assert.equal(turnCount(core), before);
  });
});
