import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { JsonObjectPrefix } from "../../electron/core/inference/jsonPrefix.js";
import { jsonValueEnd, parseAnswer, type ToolCallSyntax } from "../../electron/core/inference/toolCalls.js";

// Qwen / Hermes style, as node-llama-cpp's QwenChatWrapper describes it.
const qwen: ToolCallSyntax = {
  prefixes: ['<tool_call>\n{"name": "'],
  paramsPrefix: '", "arguments": ',
  suffix: "}\n</tool_call>",
  sectionPrefix: "",
  emptyArguments: "{}",
};
// node-llama-cpp's generic syntax (Llama 2 / general wrappers).
const generic: ToolCallSyntax = { prefixes: ["||call: ", "||call:"], paramsPrefix: "(", suffix: ")", sectionPrefix: "", emptyArguments: "{}" };

describe("tool-call parsing", () => {
  it("splits content and complete calls (Qwen syntax), several calls in a row", () => {
    const text =
      'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris (FR)"}}\n</tool_call>\n<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>';
    const p = parseAnswer(text, qwen, true);
    assert.equal(p.content, "Let me check.");
    assert.deepEqual(
      p.calls.map((c) => [c.name, c.arguments, c.complete]),
      [
        ["get_weather", '{"city": "Paris (FR)"}', true],
        ["ls", "{}", true],
      ],
    );
    assert.equal(p.endOfCalls, text.length);
  });

  it("does not end the arguments at a bracket inside a JSON string (generic syntax)", () => {
    const p = parseAnswer('ok ||call: run({"cmd": "echo (hi)"})', generic, true);
    assert.equal(p.calls[0].name, "run");
    assert.equal(p.calls[0].arguments, '{"cmd": "echo (hi)"}');
    assert.ok(p.calls[0].complete);
    assert.equal(p.content, "ok");
  });

  it("holds back text that may open a call while streaming, and grows monotonically", () => {
    const full = 'Hi <tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>';
    let lastContent = "";
    let lastArgs = "";
    for (let n = 1; n <= full.length; n++) {
      const p = parseAnswer(full.slice(0, n), qwen, false);
      assert.ok(p.content.startsWith(lastContent.trimEnd()) || lastContent.startsWith(p.content), `content shrank at ${n}`);
      assert.ok(!p.content.includes("<"), `leaked markup at ${n}: ${p.content}`);
      lastContent = p.content;
      const args = p.calls[0]?.arguments ?? "";
      assert.ok(args.startsWith(lastArgs), `arguments shrank at ${n}`);
      lastArgs = args;
    }
    assert.equal(lastArgs, '{"a": 1}');
  });

  it("jsonValueEnd finds the end of a value, or -1 while incomplete", () => {
    assert.equal(jsonValueEnd('{"a": "}"} tail', 0), 10);
    assert.equal(jsonValueEnd('{"a": [1, 2', 0), -1);
    assert.equal(jsonValueEnd("  [1]x", 0), 5);
    assert.equal(jsonValueEnd("12", 0), -1);
  });
});

describe("JSON prefix constraint", () => {
  it("accepts valid prefixes, rejects breaks, and closes any state into valid JSON", () => {
    const samples = [
      '"a": 1, "b": [true, null, {"c": "x\\"y"}]}',
      '"k": -1.5e3}',
      "}",
      '"s": "unterminated',
      '"n": 12.',
      '"arr": [1, ',
      '"key',
      '"k" ',
      '"k": tr',
      '"a": "b\\',
    ];
    for (const s of samples) {
      const st = JsonObjectPrefix.afterOpenBrace();
      assert.ok(st.pushText(s), s);
      const closed = "{" + s + st.closer();
      assert.doesNotThrow(() => JSON.parse(closed), closed);
    }
    for (const bad of ["1", '"a" 1', '"a": }', '"a": 1 "b"', '"a": 01', "]"]) assert.equal(JsonObjectPrefix.afterOpenBrace().pushText(bad), false, bad);
  });
});
