import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { startCore } from "../../electron/core/core.js";
import { startTinyCore } from "./helpers.js";

const tools: OpenAI.Responses.Tool[] = [
  {
    type: "function",
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    strict: false,
  },
];

describe("POST /v1/responses with openai-node", () => {
  let core: RunningCore;
  let client: OpenAI;
  let model: string;
  before(async () => {
    // A conversation with tool schemas and calls outgrows the tiny model's usual 1,024 tokens.
    ({ core, client, modelId: model } = await startTinyCore({ maxContextSize: 4096 }));
  });
  after(async () => {
    await core?.close();
  });

  const turnsOf = async (sessionId: string) => {
    const s = await callApi(core, "GET", `/api/sessions/${encodeURIComponent(sessionId)}`);
    assert.equal(s.status, 200);
    return s.body.turns as Array<{
      turnId: string;
      text: string;
      messages: Array<{ role: string; content: string | null; tool_call_id?: string }>;
      toolCalls?: Array<{ id: string; name: string }>;
    }>;
  };

  it("text input with instructions: a completed response, output_text, usage, a recorded turn", async () => {
    const { data: r, response } = await client.responses
      .create({ model, input: "Say hello", instructions: "You are terse.", max_output_tokens: 8, temperature: 0 })
      .withResponse();
    assert.equal(r.object, "response");
    assert.match(r.id, /^resp_/);
    assert.ok(r.status === "completed" || r.status === "incomplete");
    if (r.status === "incomplete") assert.equal(r.incomplete_details?.reason, "max_output_tokens");
    assert.equal(r.output.length, 1);
    const msg = r.output[0];
    assert.ok(msg.type === "message" && msg.role === "assistant" && msg.content[0].type === "output_text");
    assert.equal(r.output_text, msg.content[0].type === "output_text" ? msg.content[0].text : "");
    assert.ok(r.usage!.output_tokens >= 1 && r.usage!.output_tokens <= 8);
    assert.equal(r.usage!.total_tokens, r.usage!.input_tokens + r.usage!.output_tokens);
    assert.equal(r.instructions, "You are terse.");
    const turnId = response.headers.get("x-clawrl-turn-id")!;
    const turns = await turnsOf(response.headers.get("x-clawrl-session-id")!);
    const t = turns.find((x) => x.turnId === turnId);
    assert.ok(t, "the turn is recorded");
    assert.equal(t.text, r.output_text);
    assert.deepEqual(
      t.messages.map((m) => [m.role, m.content]),
      [
        ["system", "You are terse."],
        ["user", "Say hello"],
      ],
    );
    // stored: GET gives it back
    const got = await client.responses.retrieve(r.id);
    assert.equal(got.output_text, r.output_text);
  });

  it("a function call, its output fed back with previous_response_id: one conversation, one session, every turn recorded", async () => {
    const { data: first, response } = await client.responses
      .create({ model, input: [{ role: "user", content: "What is the weather in Paris?" }], tools, tool_choice: "required", max_output_tokens: 48 })
      .withResponse();
    const call = first.output.find((o) => o.type === "function_call");
    assert.ok(call && call.type === "function_call", JSON.stringify(first.output));
    assert.equal(call.name, "get_weather");
    assert.match(call.call_id, /\S/);
    assert.equal(typeof JSON.parse(call.arguments), "object");
    const sessionId = response.headers.get("x-clawrl-session-id")!;

    const { data: second, response: res2 } = await client.responses
      .create({
        model,
        previous_response_id: first.id,
        input: [{ type: "function_call_output", call_id: call.call_id, output: '{"temp": 21}' }],
        tools,
        max_output_tokens: 8,
        temperature: 0,
      })
      .withResponse();
    assert.equal(second.previous_response_id, first.id);
    assert.ok(second.output.length >= 1);
    // The second request continued the first one's conversation: same session, prompt = history + tool result.
    assert.equal(res2.headers.get("x-clawrl-session-id"), sessionId, "the continuation is found in the same session");
    const turns = await turnsOf(sessionId);
    const t2 = turns.find((x) => x.turnId === res2.headers.get("x-clawrl-turn-id"))!;
    assert.ok(t2);
    assert.deepEqual(
      t2.messages.map((m) => m.role),
      ["user", "assistant", "tool"],
    );
    assert.equal(t2.messages[2].tool_call_id, call.call_id);
    assert.equal(t2.messages[2].content, '{"temp": 21}');
    const t1 = turns.find((x) => x.turnId === response.headers.get("x-clawrl-turn-id"))!;
    assert.equal(t1.toolCalls?.[0].name, "get_weather");
    // The prompt grew: the second's input holds the first's.
    assert.ok(second.usage!.input_tokens > first.usage!.input_tokens);

    // A third turn through previous_response_id again, with a plain message.
    const third = await client.responses.create({ model, previous_response_id: second.id, input: "thanks", max_output_tokens: 4 });
    const t3 = (await turnsOf(sessionId)).at(-1)!;
    assert.deepEqual(
      t3.messages.map((m) => m.role),
      ["user", "assistant", "tool", "assistant", "user"],
    );
    assert.equal(third.previous_response_id, second.id);
  });

  it("the same conversation given as explicit items (function_call + function_call_output) is the same prompt", async () => {
    const first = await client.responses.create({
      model,
      input: "weather in Rome?",
      tools,
      tool_choice: { type: "function", name: "get_weather" },
      max_output_tokens: 120,
    });
    const call = first.output.find((o) => o.type === "function_call")!;
    assert.ok(call.type === "function_call");
    const follow = { tools, max_output_tokens: 6, temperature: 0 } as const;
    const viaId = await client.responses.create({
      model,
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
      ...follow,
    });
    const explicit = await client.responses.create({
      model,
      input: [
        { role: "user", content: "weather in Rome?" },
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "sunny" },
      ],
      ...follow,
    });
    assert.equal(explicit.usage!.input_tokens, viaId.usage!.input_tokens);
    assert.equal(explicit.output_text, viaId.output_text);
  });

  it("streaming: typed events in order, deltas joining into the done text and the final response", async () => {
    const stream = await client.responses.create({ model, input: "Tell me a story", max_output_tokens: 12, temperature: 1, stream: true });
    const types: string[] = [];
    let deltas = "";
    let doneText: string | null = null;
    let final: OpenAI.Responses.Response | null = null;
    let seq = -1;
    for await (const ev of stream) {
      types.push(ev.type);
      assert.equal(ev.sequence_number, seq + 1);
      seq = ev.sequence_number;
      if (ev.type === "response.output_text.delta") deltas += ev.delta;
      if (ev.type === "response.output_text.done") doneText = ev.text;
      if (ev.type === "response.completed" || ev.type === "response.incomplete") final = ev.response;
    }
    assert.equal(types[0], "response.created");
    assert.equal(types[1], "response.in_progress");
    assert.ok(["response.completed", "response.incomplete"].includes(types.at(-1)!));
    for (const t of [
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
    ])
      assert.ok(types.includes(t), `${t} in ${types.join(",")}`);
    assert.ok(types.indexOf("response.output_text.delta") < types.indexOf("response.output_text.done"));
    assert.equal(doneText, deltas);
    assert.ok(final);
    assert.equal(
      final.output_text ?? (final.output[0].type === "message" && final.output[0].content[0].type === "output_text" ? final.output[0].content[0].text : null),
      deltas,
    );
    const got = await client.responses.retrieve(final.id);
    assert.equal(got.status, final.status);
  });

  it("streaming function calls: per-item argument deltas and done events, each item done with its arguments", async () => {
    const stream = await client.responses.create({ model, input: "weather in Oslo?", tools, tool_choice: "required", max_output_tokens: 120, stream: true });
    const deltas = new Map<string, string>();
    const done = new Map<string, string>();
    const items: OpenAI.Responses.ResponseFunctionToolCall[] = [];
    const added = new Set<string>();
    for await (const ev of stream) {
      if (ev.type === "response.output_item.added" && ev.item.type === "function_call") added.add(ev.item.id!);
      if (ev.type === "response.function_call_arguments.delta") deltas.set(ev.item_id, (deltas.get(ev.item_id) ?? "") + ev.delta);
      if (ev.type === "response.function_call_arguments.done") done.set(ev.item_id, ev.arguments);
      if (ev.type === "response.output_item.done" && ev.item.type === "function_call") items.push(ev.item);
    }
    assert.ok(items.length >= 1);
    for (const item of items) {
      assert.ok(added.has(item.id!), "added before done");
      assert.equal(item.name, "get_weather");
      assert.equal(done.get(item.id!), deltas.get(item.id!), "the deltas add up to the done arguments");
      assert.equal(item.arguments, done.get(item.id!));
      assert.equal(typeof JSON.parse(item.arguments), "object");
    }
  });

  it("text.format json_schema: the output is JSON valid against the schema at any temperature, and the response says the format", async () => {
    const schema = {
      type: "object",
      properties: { city: { type: "string", maxLength: 12 }, days: { type: "integer" } },
      required: ["city", "days"],
      additionalProperties: false,
    };
    for (const temperature of [0, 1.5]) {
      const r = await client.responses.create({
        model,
        input: "Plan a trip",
        max_output_tokens: 48,
        temperature,
        text: { format: { type: "json_schema", name: "trip", schema, strict: true } },
      });
      assert.equal(r.text?.format?.type, "json_schema");
      const v = JSON.parse(r.output_text) as { city: unknown; days: unknown };
      assert.deepEqual(Object.keys(v).sort(), ["city", "days"]);
      // maxLength counts characters (code points), as the grammar does: one past U+FFFF is two UTF-16 units.
      assert.ok(typeof v.city === "string" && [...v.city].length <= 12 && Number.isInteger(v.days), r.output_text);
    }
    const obj = await client.responses.create({ model, input: "Anything", max_output_tokens: 24, temperature: 1, text: { format: { type: "json_object" } } });
    if (obj.status === "completed") assert.equal(typeof JSON.parse(obj.output_text), "object");
  });

  it("refusals: unknown fields, unknown previous_response_id, non-function tools, store: false is not kept", async () => {
    for (const [body, param, code] of [
      [{ input: "x", bogus: 1 }, "bogus", "unsupported_parameter"],
      [{ input: "x", previous_response_id: "resp_nope" }, "previous_response_id", "previous_response_not_found"],
      [{ input: "x", tools: [{ type: "web_search" }] }, "tools[0].type", "invalid_value"],
      [{ input: "x", text: { format: { type: "xml" } } }, "text.format.type", "invalid_value"],
      [
        { input: "x", text: { format: { type: "json_schema", name: "n", schema: { type: "string", pattern: "^a+$" } } } },
        "text.format.json_schema.schema",
        "unsupported_schema",
      ],
      [{ input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }, "input[0]", "invalid_value"],
    ] as const) {
      const r = await callApi(core, "POST", "/v1/responses", body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.param, param, JSON.stringify(r.body));
      assert.equal(r.body.error.code, code, JSON.stringify(r.body));
    }
    const r = await client.responses.create({ model, input: "hi", store: false, max_output_tokens: 2 });
    assert.equal(r.status === "completed" || r.status === "incomplete", true);
    await assert.rejects(client.responses.retrieve(r.id), (e: { status?: number }) => e.status === 404);
    const follow = await callApi(core, "POST", "/v1/responses", { input: "again", previous_response_id: r.id, max_output_tokens: 2 });
    assert.equal(follow.status, 400);
  });
});

describe("/v1/responses: a stored response outlives a restart", () => {
  it("previous_response_id works against a new core on the same data directory", async () => {
    const { core, client, modelId } = await startTinyCore();
    const dataDir = core.paths.root;
    let first: OpenAI.Responses.Response;
    try {
      first = await client.responses.create({ model: modelId, input: "remember me", max_output_tokens: 3 });
    } finally {
      await core.close();
    }
    const again = await startCore({
      model: core.engine?.info().modelPath ?? (await import("../helpers/models.js").then((m) => m.tinyModel({ arch: "qwen2" }))),
      dataDir,
      token: "t2",
      uiDir: "",
      engine: { maxContextSize: 1024, sequences: 1, threads: 1, backend: "cpu" },
    });
    try {
      const r = await callApi(again, "POST", "/v1/responses", { input: "and now?", previous_response_id: first.id, max_output_tokens: 3 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.previous_response_id, first.id);
      assert.ok(r.body.usage.input_tokens > first.usage!.input_tokens);
    } finally {
      await again.close();
    }
  });
});
