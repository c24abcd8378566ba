/**
 * The real client libraries' structured-output and tool helpers against a real core on the tiny
 * model. That model writes random text: only the grammars make its JSON valid, so every check
 * here fails without them.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { generateObject, generateText, tool } from "ai";
import type OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";
import type { RunningCore } from "../../electron/core/core.js";
import { startTinyCore } from "./helpers.js";

const Person = z.object({
  name: z.string().max(12),
  age: z.number().int(),
  mood: z.enum(["happy", "sad"]),
  pets: z.array(z.string().max(8)).max(3),
  nickname: z.string().max(6).nullable(),
});

const Weather = z.object({ city: z.string().max(10), unit: z.enum(["c", "f"]) });
const Files = z.object({ dir: z.string().max(8), depth: z.number().int() });

describe("real clients: structured outputs and schema-true tool calls", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore());
  });
  after(async () => {
    await core?.close();
  });

  it("openai-node: chat.completions.parse with zodResponseFormat gives a parsed, valid object", async () => {
    for (const [temperature, seed] of [
      [0, 1],
      [1, 2],
      [1.8, 3],
    ]) {
      const r = await client.chat.completions.parse({
        model: modelId,
        messages: [{ role: "user", content: "Describe a person." }],
        response_format: zodResponseFormat(Person, "person"),
        max_tokens: 200,
        temperature,
        seed,
      });
      const parsed = r.choices[0].message.parsed;
      assert.ok(parsed, r.choices[0].message.content ?? "");
      assert.deepEqual(Person.parse(parsed), parsed);
    }
  });

  it("Vercel AI SDK: generateObject (json_schema) validates against the schema", async () => {
    const provider = createOpenAICompatible({ name: "clawrl", baseURL: `${core.url}/v1`, apiKey: core.token, supportsStructuredOutputs: true });
    for (const seed of [4, 5]) {
      const { object } = await generateObject({
        model: provider(modelId),
        schema: Person,
        prompt: "Describe a person.",
        maxOutputTokens: 200,
        temperature: 1,
        seed,
        maxRetries: 0,
      });
      Person.parse(object);
    }
  });

  it("LangChain JS: ChatOpenAI.withStructuredOutput (json_schema and the default method)", async () => {
    const llm = new ChatOpenAI({
      model: modelId,
      apiKey: core.token,
      configuration: { baseURL: `${core.url}/v1` },
      maxTokens: 200,
      temperature: 1,
      maxRetries: 0,
    });
    const viaSchema = await llm.withStructuredOutput(Person, { name: "person", method: "jsonSchema" }).invoke("Describe a person.");
    Person.parse(viaSchema);
    // The default (function calling for a model LangChain does not know): a forced, named tool call.
    const viaDefault = await llm.withStructuredOutput(Person, { name: "person" }).invoke("Describe a person.");
    Person.parse(viaDefault);
  });

  const weatherTool = tool({ description: "Current weather in a city", inputSchema: Weather, execute: async () => "sunny" });
  const filesTool = tool({ description: "List files", inputSchema: Files, execute: async () => [] });

  it("Vercel AI SDK: generateText with toolChoice 'required' at maxOutputTokens 32 calls a tool with valid arguments", async () => {
    const provider = createOpenAICompatible({ name: "clawrl", baseURL: `${core.url}/v1`, apiKey: core.token });
    for (const seed of [1, 2, 3, 4]) {
      const r = await generateText({
        model: provider(modelId),
        tools: { get_weather: weatherTool, list_files: filesTool },
        toolChoice: "required",
        prompt: "What is the weather in Paris?",
        maxOutputTokens: 32,
        temperature: 1,
        seed,
        maxRetries: 0,
      });
      assert.ok(r.toolCalls.length >= 1, `seed ${seed}: no tool call (${r.finishReason})`);
      for (const c of r.toolCalls) {
        assert.ok(!("invalid" in c && c.invalid), `seed ${seed}: invalid call ${JSON.stringify(c)}`);
        if (c.toolName === "get_weather") Weather.parse(c.input);
        else Files.parse(c.input);
      }
    }
  });

  it("LangChain JS: bindTools with a named tool_choice at maxTokens 32 gives valid args and no invalid calls", async () => {
    const llm = new ChatOpenAI({
      model: modelId,
      apiKey: core.token,
      configuration: { baseURL: `${core.url}/v1` },
      maxTokens: 32,
      temperature: 1.5,
      maxRetries: 0,
    });
    const weather = { type: "function" as const, function: { name: "get_weather", description: "Weather", parameters: z.toJSONSchema(Weather) } };
    const files = { type: "function" as const, function: { name: "list_files", description: "Files", parameters: z.toJSONSchema(Files) } };
    for (const seed of [1, 2, 3]) {
      const msg = await llm.bindTools([weather, files], { tool_choice: "list_files", seed }).invoke("List my files.");
      assert.equal(msg.invalid_tool_calls?.length ?? 0, 0, JSON.stringify(msg.invalid_tool_calls));
      assert.equal(msg.tool_calls?.length, 1);
      assert.equal(msg.tool_calls[0].name, "list_files");
      Files.parse(msg.tool_calls[0].args);
    }
  });

  it("parallel_tool_calls: several calls in one answer when allowed, exactly one when not", async () => {
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
      { type: "function", function: { name: "get_weather", parameters: z.toJSONSchema(Weather) } },
      { type: "function", function: { name: "list_files", parameters: z.toJSONSchema(Files) } },
    ];
    const counts = async (parallel: boolean) => {
      const out: number[] = [];
      for (let seed = 1; seed <= 12; seed++) {
        const r = await client.chat.completions.create({
          model: modelId,
          messages: [{ role: "user", content: "Weather in Paris and my files?" }],
          tools,
          tool_choice: "required",
          parallel_tool_calls: parallel,
          max_tokens: 32,
          temperature: 1,
          seed,
        });
        const calls = r.choices[0].message.tool_calls ?? [];
        assert.equal(r.choices[0].finish_reason, "tool_calls", `seed ${seed}: ${JSON.stringify(r.choices[0].message)} ${r.usage?.completion_tokens}`);
        for (const c of calls) {
          assert.equal(c.type, "function");
          if (c.type !== "function") continue;
          (c.function.name === "get_weather" ? Weather : Files).parse(JSON.parse(c.function.arguments));
        }
        out.push(calls.length);
      }
      return out;
    };
    const allowed = await counts(true);
    assert.ok(
      allowed.some((n) => n >= 2),
      `never more than one call: ${allowed.join(",")}`,
    );
    assert.ok(allowed.every((n) => n >= 1));
    assert.deepEqual(await counts(false), Array(12).fill(1));
  });
});
