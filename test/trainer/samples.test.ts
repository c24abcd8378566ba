import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Token } from "node-llama-cpp";
import { parseSamplesJsonl } from "../../models/samples/sample.js";
import { fitContext, SampleTokenizer, toChatHistory } from "../../trainer/train/tokenize.js";
import { tinyModel } from "../helpers/models.js";
import { storiesModelPath } from "../helpers/cli.js";

const line = (o: object) => JSON.stringify(o);
/** node-llama-cpp brands token ids; ours are plain numbers from the same vocabulary. */
const asTokens = (ids: number[]) => ids as Token[];
const user = [{ role: "user", content: "Hi there" }];

describe("sample schema", () => {
  test("accepts the text form, the served form, and both", () => {
    const text = [
      line({ messages: user, response: "Hello", reward: -1, hint: "Be brief." }),
      "",
      line({ prompt_tokens: [1, 2], response_tokens: [3, 4], logprobs: [-0.5, -1], reward: 1 }),
      line({
        messages: [{ role: "system", content: null }, ...user, { role: "assistant", content: [{ type: "text", text: "a" }] }, { role: "tool", content: "ok" }],
        response: "x",
        hints: ["h1", "h2"],
      }),
    ].join("\n");
    const got = parseSamplesJsonl(text, "d.jsonl");
    assert.deepEqual(
      got.map((g) => g.line),
      [1, 3, 4],
    );
    assert.equal(got[0].sample.reward, -1);
    assert.deepEqual(got[1].sample.logprobs, [-0.5, -1]);
  });

  test("every bad line is refused with its line number and the problem", () => {
    const bad: Array<[object | string, RegExp]> = [
      ["{oops", /^Error: d\.jsonl:2: not valid JSON/],
      [{ messages: user, response: "x", reward: 2 }, /^Error: d\.jsonl:2: invalid sample: reward: reward must be a number from -1 to 1$/],
      [{ messages: user }, /needs messages \+ response/],
      [{ prompt_tokens: [1] }, /prompt_tokens and response_tokens go together/],
      [{ prompt_tokens: [1], response_tokens: [2, 3], logprobs: [-1] }, /logprobs has 1 values for 2 response_tokens/],
      [{ prompt_tokens: [1], response_tokens: [2], logprobs: [0.5] }, /logprobs\.0/],
      [{ prompt_tokens: [1], response_tokens: [2], hint: "h" }, /a hint needs messages/],
      [{ messages: [{ role: "system", content: "s" }], response: "x" }, /messages have no user message/],
      [{ messages: [{ role: "robot", content: "s" }], response: "x" }, /messages\.0\.role/],
      [{ prompt_tokens: [1.5], response_tokens: [2] }, /prompt_tokens\.0/],
    ];
    for (const [value, re] of bad) {
      const text = `${line({ messages: user, response: "ok" })}\n${typeof value === "string" ? value : line(value)}`;
      assert.throws(() => parseSamplesJsonl(text, "d.jsonl"), re);
    }
    assert.throws(() => parseSamplesJsonl("\n\n", "d.jsonl"), /^Error: d\.jsonl: no samples$/);
  });
});

describe("fitting the training context", () => {
  test("keeps the end of the prompt, then the start of an over-long response", () => {
    assert.deepEqual(fitContext([1, 2, 3], [4, 5], 8), { prompt: [1, 2, 3], response: [4, 5], truncated: false });
    assert.deepEqual(fitContext([1, 2, 3, 4, 5], [6, 7], 4), { prompt: [4, 5], response: [6, 7], truncated: true });
    assert.deepEqual(fitContext([1, 2], [3, 4, 5, 6], 3), { prompt: [2], response: [3, 4], truncated: true });
    assert.throws(() => fitContext([1], [2], 1), /at least 2 tokens/);
  });

  test("the hint goes at the end of the last user message; tool results become marked user text", () => {
    const h = toChatHistory(
      [
        { role: "system", content: "S" },
        { role: "user", content: "first" },
        { role: "assistant", content: "reply" },
        { role: "user", content: [{ type: "text", text: "second" }] },
        { role: "tool", content: "42" },
      ],
      "do X",
    );
    assert.deepEqual(h, [
      { type: "system", text: "S" },
      { type: "user", text: "first" },
      { type: "model", response: ["reply"] },
      { type: "user", text: "second\n\n[user's hint / instruction]\ndo X" },
      { type: "user", text: "[tool result]\n42" },
      { type: "model", response: [] },
    ]);
  });
});

describe("tokenization with the model's chat template", () => {
  let tok: SampleTokenizer;
  before(async () => {
    tok = await SampleTokenizer.open(await tinyModel({ arch: "qwen2" }));
  });
  after(async () => {
    await tok.dispose();
  });

  test("prompt rendered by the ChatML template, response ends with the end-of-turn token", () => {
    const [{ sample }] = parseSamplesJsonl(line({ messages: user, response: "Hello!", reward: 1, hint: "Say more." }));
    const p = tok.prepare(sample, { maxContext: 4096 }, 7);
    const text = tok.model.detokenize(asTokens(p.tokens), true);
    assert.match(text, /<\|im_start\|>user\nHi there<\|im_end\|>\n<\|im_start\|>assistant\n/);
    assert.ok(text.endsWith("Hello!<|im_end|>"), text);
    assert.equal(tok.model.detokenize(asTokens(p.tokens.slice(p.promptLength)), true), "Hello!<|im_end|>");
    assert.equal(p.line, 7);
    assert.equal(p.reward, 1);
    assert.equal(p.truncated, false);
    assert.equal(p.teachers.length, 1);
    const t = p.teachers[0];
    assert.match(tok.model.detokenize(asTokens(t.tokens.slice(0, t.promptLength)), true), /Hi there\n\n\[user's hint \/ instruction\]\nSay more\.<\|im_end\|>/);
    assert.deepEqual(t.tokens.slice(t.promptLength), p.tokens.slice(p.promptLength), "the teacher scores the same response tokens");
  });

  test("served token ids and log-probs are used as given; long prompts keep their end", () => {
    const [{ sample }] = parseSamplesJsonl(line({ prompt_tokens: [10, 11, 12, 13, 14, 15], response_tokens: [20, 21], logprobs: [-1, -2], reward: -1 }));
    const p = tok.prepare(sample, { maxContext: 5 });
    assert.deepEqual(p.tokens, [13, 14, 15, 20, 21]);
    assert.equal(p.promptLength, 3);
    assert.deepEqual(p.servedLogprobs, [-1, -2]);
    assert.equal(p.truncated, true);
  });
});

describe("plain-completion samples (a base model, no chat template)", () => {
  let tok: SampleTokenizer;
  before(async () => {
    tok = await SampleTokenizer.open(storiesModelPath());
  });
  after(async () => {
    await tok.dispose();
  });

  test("the teacher reads the hint as a paragraph before the student's unchanged prompt tokens", () => {
    const bos = tok.model.tokens.bos!;
    const prompt = [bos, ...tok.model.tokenize("Once upon a time, there was a dog.", false)];
    const response = [...tok.model.tokenize(" The dog ran.", false)];
    const [{ sample }] = parseSamplesJsonl(
      line({
        prompt_tokens: prompt,
        response_tokens: response,
        reward: -1,
        hint: "The story is about a cat.",
        messages: [{ role: "user", content: "Once upon a time, there was a dog." }],
        format: "completion",
      }),
    );
    const p = tok.prepare(sample, { maxContext: 512 });
    assert.deepEqual(p.tokens, [...prompt, ...response], "the student's tokens are the served ones");
    const t = p.teachers[0];
    assert.equal(t.tokens[0], bos);
    assert.deepEqual(
      t.tokens.slice(t.promptLength - (prompt.length - 1)),
      [...prompt.slice(1), ...response],
      "the teacher continues exactly the student's prompt",
    );
    const hintText = tok.model.detokenize(asTokens(t.tokens.slice(1, t.promptLength - (prompt.length - 1))), false);
    assert.equal(hintText.trim(), "The story is about a cat.");
    assert.ok(hintText.endsWith("\n\n"), JSON.stringify(hintText));
    assert.doesNotMatch(tok.model.detokenize(asTokens(t.tokens), true), /hint \/ instruction|### |<\|im_start/, "no chat template, no chat-style hint marker");
  });

  test("a text-form completion sample is tokenized as plain text after BOS", () => {
    const [{ sample }] = parseSamplesJsonl(
      line({ messages: [{ role: "user", content: "Tom had a ball." }], response: " It was red.", reward: 1, format: "completion" }),
    );
    const p = tok.prepare(sample, { maxContext: 512, appendEndToken: false });
    assert.deepEqual(p.tokens.slice(0, p.promptLength), [tok.model.tokens.bos!, ...tok.model.tokenize("Tom had a ball.", false)]);
    assert.equal(tok.model.detokenize(asTokens(p.tokens.slice(p.promptLength)), false).trim(), "It was red.");
  });
});
