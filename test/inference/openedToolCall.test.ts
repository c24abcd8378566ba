/**
 * tool_choice "auto": once the model has opened a call, its name is one of the tools and its
 * arguments follow that tool's schema. The tiny model never opens a call by itself, so the
 * moment it does is simulated (openedCall answers "opened" after a few tokens); the switch to
 * the constrained call (the stepper replaced, the last token fed again) is the real one.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Engine, type GenerateEvent } from "../../electron/core/inference/engine.js";
import type { FunctionTool } from "../../electron/core/inference/chatPrompt.js";
import { tinyModel } from "../helpers/models.js";

const tools: FunctionTool[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 6 }, unit: { enum: ["c", "f"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
  { name: "list_files", parameters: { type: "object", properties: { depth: { type: "integer" } }, required: ["depth"], additionalProperties: false } },
];

type OpenedCall = (text: string, t: FunctionTool[] | undefined) => { content: string; nameText: string } | null;

describe("a call the model opens itself (tool_choice auto)", () => {
  let engine: Engine;
  before(async () => {
    engine = await Engine.load({ modelPath: await tinyModel({ arch: "qwen2" }), backend: "cpu", threads: 1, maxContextSize: 1024, sequences: 1 });
  });
  after(async () => {
    await engine?.close();
  });

  it("recognises an opened call whose name fits a tool, with the content before it", () => {
    const opened = (engine as unknown as { openedCall: OpenedCall }).openedCall.bind(engine);
    const prefix = engine.syntax.prefixes[0];
    assert.deepEqual(opened(`Sure. ${prefix}get_w`, tools), { content: "Sure.", nameText: "get_w" });
    assert.deepEqual(opened(`${prefix}`, tools), { content: "", nameText: "" });
    assert.equal(opened(`${prefix}nope`, tools), null, "a name that fits no tool is left as written");
    assert.equal(opened("no call here", tools), null);
  });

  for (const [label, temperature, extra] of [
    ["greedy, llama.cpp's sampler before the call", 0, {}],
    ["sampled, llama.cpp's sampler before the call", 1.2, {}],
    ["sampled in JS throughout (top log-probs)", 1, { topLogprobs: 2 }],
  ] as const) {
    it(`holds the opened call's name and arguments to the tools: ${label}`, async () => {
      const patched = engine as unknown as { openedCall: OpenedCall };
      const real = patched.openedCall;
      // The model "opens" a call after its third token, having written some content.
      patched.openedCall = (text) => (text.length >= 3 ? { content: text, nameText: "" } : null);
      try {
        for (const seed of [1, 2, 3]) {
          const events: GenerateEvent[] = [];
          const r = await engine.generate(
            { messages: [{ role: "user", content: "Weather?" }], tools, toolChoice: "auto", temperature, seed, maxTokens: 40, ...extra },
            { onEvent: (e) => events.push(e) },
          );
          assert.equal(r.finishReason, "tool_calls", JSON.stringify(r.toolCalls));
          assert.ok(r.text.length >= 3, `the content before the call stays: ${JSON.stringify(r.text)}`);
          assert.ok(r.toolCalls.length >= 1);
          for (const c of r.toolCalls) {
            const args = JSON.parse(c.arguments) as Record<string, unknown>;
            if (c.name === "get_weather") {
              assert.deepEqual(Object.keys(args).sort(), ["city", "unit"]);
              assert.ok(typeof args.city === "string" && [...args.city].length <= 6);
              assert.ok(args.unit === "c" || args.unit === "f");
            } else {
              assert.equal(c.name, "list_files");
              assert.ok(Number.isInteger(args.depth), c.arguments);
            }
          }
          // Streamed: the calls' deltas assemble into the result's calls.
          const streamed: string[] = [];
          for (const e of events) if (e.type === "toolArguments") streamed[e.index] = (streamed[e.index] ?? "") + e.text;
          assert.deepEqual(
            streamed,
            r.toolCalls.map((c) => c.arguments),
          );
          assert.equal(r.tokenLogprobs.length, r.responseTokens.length);
        }
      } finally {
        patched.openedCall = real;
      }
    });
  }
});
