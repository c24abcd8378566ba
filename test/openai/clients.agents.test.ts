import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";
import type { RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { startTinyCore } from "./helpers.js";

// The OpenAI Agents SDK (@openai/agents 0.20) against a real core on the tiny model (issue 28).
// Its nested openai@7 declares Node ≥ 22; on this project's Node 20 it imports and runs (fetch,
// streams and AbortSignal are all there): this suite is the check that it keeps doing so.
// Tracing is off: it would export spans to api.openai.com.
setTracingDisabled(true);

type Msg = { role: string; content: string | null; tool_call_id?: string };

// The tiny model's free text never ends before its budget, and a Responses run that ends
// "incomplete" (max_output_tokens) is an error to the SDK: the agents answer in a structured
// output whose schema allows only a few short values, so the grammar ends it within the budget.
const Forecast = z.object({ sky: z.enum(["sunny", "cloudy", "rainy"]) });

describe("the OpenAI Agents SDK against a real core", () => {
  let core: RunningCore;
  let model: string;
  before(async () => {
    // An agent's instructions, tool schema and tool round trip outgrow the tiny model's usual 1,024 tokens.
    ({ core, modelId: model } = await startTinyCore({ maxContextSize: 4096 }));
  });
  after(async () => {
    await core?.close();
  });

  const calls: string[] = [];
  const getWeather = tool({
    name: "get_weather",
    description: "The weather in a city",
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      calls.push(city);
      return `{"city": ${JSON.stringify(city)}, "temp": 21}`;
    },
  });
  const turnsOf = async (sessionId: string) => {
    const s = await callApi(core, "GET", `/api/sessions/${encodeURIComponent(sessionId)}`);
    assert.equal(s.status, 200);
    return s.body.turns as Array<{ turnId: string; messages: Msg[]; toolCalls?: Array<{ id: string; name: string }> }>;
  };
  const sessionIds = async () => ((await callApi(core, "GET", "/api/sessions")).body.sessions as Array<{ id: string }>).map((s) => s.id);

  for (const useResponses of [true, false]) {
    const api = useResponses ? "the Responses API" : "chat completions";
    it(`${api}: an agent with a function tool: the forced call runs the tool, its output goes back to the model, the run ends with an answer`, async () => {
      calls.length = 0;
      const runner = new Runner({ modelProvider: new OpenAIProvider({ baseURL: `${core.url}/v1`, apiKey: core.token, useResponses }), tracingDisabled: true });
      // toolChoice required: the tiny model's call is held to the schema; the SDK resets it to
      // auto after the call (resetToolChoice), so the second request answers the tool's output.
      const agent = new Agent({
        name: "weather",
        instructions: "You answer weather questions.",
        model,
        tools: [getWeather],
        outputType: Forecast,
        modelSettings: { toolChoice: "required", temperature: 0, maxTokens: 32 },
      });
      const result = await runner.run(agent, "What is the weather in Paris?", { maxTurns: 4 });
      assert.equal(calls.length, 1, `one tool call (${calls.join(", ")})`);
      assert.equal(typeof calls[0], "string");
      const kinds = result.newItems.map((i) => i.type);
      assert.deepEqual(kinds.slice(0, 2), ["tool_call_item", "tool_call_output_item"], kinds.join(", "));
      assert.equal(kinds.at(-1), "message_output_item");
      assert.ok(Forecast.safeParse(result.finalOutput).success, JSON.stringify(result.finalOutput));
      if (useResponses) {
        assert.match(result.lastResponseId ?? "", /^resp_/);
        // The second request carried the call and its output: the recorded turn ends with the tool message.
        const stored = await callApi(core, "GET", `/v1/responses/${result.lastResponseId}`);
        assert.equal(stored.status, 200);
      }
    });
  }

  it("previous_response_id: a follow-up run continues the stored conversation (tool call and output included) in the same session", async () => {
    calls.length = 0;
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ baseURL: `${core.url}/v1`, apiKey: core.token, useResponses: true }),
      tracingDisabled: true,
    });
    const agent = new Agent({
      name: "weather",
      instructions: "You answer weather questions.",
      model,
      tools: [getWeather],
      outputType: Forecast,
      modelSettings: { toolChoice: "required", temperature: 0, maxTokens: 32 },
    });
    const first = await runner.run(agent, "What is the weather in Paris?", { maxTurns: 4 });
    assert.equal(calls.length, 1);
    const before = new Set(await sessionIds());
    const followUp = new Agent({
      name: "weather",
      instructions: "You answer weather questions.",
      model,
      tools: [getWeather],
      outputType: Forecast,
      modelSettings: { toolChoice: "none", temperature: 0, maxTokens: 32 },
    });
    const second = await runner.run(followUp, "And tomorrow?", { previousResponseId: first.lastResponseId, maxTurns: 2 });
    assert.equal(calls.length, 1, "no new tool call");
    assert.match(second.lastResponseId ?? "", /^resp_/);
    assert.notEqual(second.lastResponseId, first.lastResponseId);
    const stored = await callApi(core, "GET", `/v1/responses/${second.lastResponseId}`);
    assert.equal(stored.body.previous_response_id, first.lastResponseId);
    // No new session: the follow-up was found to continue one already there, and its prompt holds the whole conversation.
    const sessions = await sessionIds();
    assert.deepEqual(
      sessions.filter((id) => !before.has(id)),
      [],
    );
    let found: Msg[] | null = null;
    for (const id of sessions) for (const t of await turnsOf(id)) if (t.messages.at(-1)?.content === "And tomorrow?") found = t.messages;
    assert.ok(found, "the follow-up turn is recorded");
    const roles = found.map((m) => m.role);
    assert.deepEqual(roles.slice(0, 2), ["system", "user"]);
    assert.ok(roles.includes("tool"), roles.join(", "));
    assert.equal(found.find((m) => m.role === "tool")?.content, `{"city": ${JSON.stringify(calls[0])}, "temp": 21}`);
    assert.equal(roles.at(-1), "user");
  });
});
