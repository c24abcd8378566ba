import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Token } from "node-llama-cpp";
import { AbortedError, Engine, type GenerateEvent, type GenerateResult } from "../../electron/core/inference/engine.js";
import { hasExactTokenProbability } from "../../electron/core/inference/tokenProbability.js";
import { buildTinyModel } from "../../models/tiny/generate.js";
import { encodeGguf } from "../../models/gguf/writer.js";
import { GgufValueType } from "../../models/gguf/types.js";
import { tinyModel } from "../helpers/models.js";

const messages = [{ role: "user" as const, content: "Tell me about the weather" }];

describe("inference engine", () => {
  let engine: Engine;
  before(async () => {
    engine = await Engine.load({ modelPath: await tinyModel({ arch: "qwen2" }), backend: "cpu", threads: 1, maxContextSize: 512, sequences: 1 });
  });
  after(async () => {
    await engine?.close();
  });

  it("reports backend, context and chat template", () => {
    const i = engine.info();
    assert.equal(i.backend, "cpu");
    assert.equal(i.gpuLayers, 0);
    assert.equal(i.trainContextSize, 32768);
    assert.ok(i.contextSize >= 512 && i.contextSize <= 1024, String(i.contextSize));
    assert.equal(i.chatWrapper, "Qwen");
    assert.equal(i.adapter, "base");
  });

  /** log p(response token) re-computed independently: prompt + response evaluated in one pass in a fresh context. */
  async function referenceLogprobs(r: GenerateResult): Promise<number[]> {
    const ctx = await engine.model.createContext({ contextSize: 512, threads: 1 });
    try {
      const seq = ctx.getSequence();
      const all = [...r.promptTokens, ...r.responseTokens] as Token[];
      const first = r.promptTokens.length - 1;
      const out = await seq.controlledEvaluate(all.slice(0, -1).map((t, i) => (i >= first ? [t, { generateNext: { logits: true } }] : t)));
      return r.responseTokens.map((tok, j) => {
        const logits = out[first + j]!.next.logits!;
        const max = Math.max(...logits.values());
        let z = 0;
        for (const l of logits.values()) z += Math.exp(l - max);
        return logits.get(tok as Token)! - max - Math.log(z);
      });
    } finally {
      await ctx.dispose();
    }
  }

  for (const [label, sampling] of [
    ["native sampler (temperature 1)", { temperature: 1 }],
    ["native sampler (temperature 0.7)", { temperature: 0.7 }],
    ["native sampler (temperature 0.7, top_p 0.9)", { temperature: 0.7, topP: 0.9 }],
    ["JS sampler (top log-probs asked)", { temperature: 0.7, topP: 0.9, topLogprobs: 3 }],
    ["greedy", { temperature: 0 }],
  ] as const) {
    it(`records temperature-1 log-probs of the sampled tokens: ${label}`, async () => {
      const r = await engine.generate({ messages, maxTokens: 16, seed: 21, ...sampling });
      assert.equal(r.tokenLogprobs.length, r.responseTokens.length);
      const ref = await referenceLogprobs(r);
      for (let j = 0; j < ref.length; j++)
        assert.ok(Math.abs(r.tokenLogprobs[j] - ref[j]) < 2e-3, `token ${j}: served ${r.tokenLogprobs[j]} vs reference ${ref[j]}`);
    });
  }

  it("asks the native sampler for nothing that sorts the vocabulary (log-probs in one pass over the logits)", async () => {
    // node-llama-cpp sorts every candidate when a sampled token's confidence or probabilities,
    // all logits or the top logits are asked for (~17 ms a token at a 152k vocabulary). A spy
    // between the context's native object and its prototype sees every call that reaches C++.
    const lease = await engine.gate.acquire([]);
    const addon = (lease.sequence.context as unknown as { _ctx: object })._ctx;
    lease.release();
    assert.ok(hasExactTokenProbability(lease.sequence.context));
    const proto = Object.getPrototypeOf(addon) as { sampleToken: (...a: unknown[]) => Promise<unknown> };
    const calls: unknown[][] = [];
    const spy = Object.create(proto) as typeof proto;
    Object.defineProperty(spy, "sampleToken", {
      value(this: object, ...args: unknown[]) {
        calls.push(args);
        return proto.sampleToken.apply(this, args);
      },
    });
    Object.setPrototypeOf(addon, spy);
    try {
      // Top-p included: the app's chat asks for 0.95 by default.
      for (const [temperature, topP] of [
        [0, 1],
        [1, 1],
        [0.7, 1],
        [0.7, 0.9],
      ]) {
        calls.length = 0;
        const r = await engine.generate({ messages, maxTokens: 8, seed: 5, temperature, topP });
        const ref = await referenceLogprobs(r);
        for (let j = 0; j < ref.length; j++)
          assert.ok(Math.abs(r.tokenLogprobs[j] - ref[j]) < 2e-3, `temperature ${temperature}, token ${j}: ${r.tokenLogprobs[j]} vs ${ref[j]}`);
        // Greedy: the pick and the sum in one call; sampled: the request's sampler picks, a greedy one measures.
        assert.equal(calls.length, (temperature === 0 ? 1 : 2) * r.responseTokens.length, `temperature ${temperature}: ${calls.length} native calls`);
        for (const [, , probabilities, confidence, logits] of calls) {
          const sorts = probabilities === true || confidence === true || logits === true || (Array.isArray(logits) && Number(logits[4]) > 0);
          assert.ok(!sorts, `temperature ${temperature}: a sampleToken call that sorts: ${JSON.stringify({ probabilities, confidence, logits })}`);
        }
      }
      // Scoring a text (echo + logprobs): the same numbers, one native pass per position, no full logits into JS.
      calls.length = 0;
      const r = await engine.generate({ messages, maxTokens: 8, seed: 6, temperature: 1 });
      const scored = await engine.scoreTokens([...r.promptTokens, ...r.responseTokens] as Token[]);
      const tail = scored.logprobs.slice(-r.responseTokens.length);
      for (let j = 0; j < tail.length; j++) assert.ok(Math.abs(tail[j] - r.tokenLogprobs[j]) < 2e-3, `scored token ${j}: ${tail[j]} vs ${r.tokenLogprobs[j]}`);
      for (const [, , probabilities, confidence, logits] of calls) {
        assert.ok(
          !(probabilities === true || confidence === true || logits === true || (Array.isArray(logits) && Number(logits[4]) > 0)),
          JSON.stringify(logits),
        );
      }
    } finally {
      Object.setPrototypeOf(addon, proto);
    }
  });

  it("is deterministic for a seed", async () => {
    const a = await engine.generate({ messages, maxTokens: 12, seed: 99, temperature: 0.8, topP: 0.95 });
    const b = await engine.generate({ messages, maxTokens: 12, seed: 99, temperature: 0.8, topP: 0.95 });
    assert.deepEqual(a.responseTokens, b.responseTokens);
  });

  it("marks the wait for the first token as foreground: from the sequence to the first token, once per request", async () => {
    const seen: string[] = [];
    const off = engine.foreground.onChange((active) => seen.push(active ? "wait" : "first"));
    try {
      let events = 0;
      const r = await engine.generate(
        { messages, maxTokens: 8, seed: 3, temperature: 1 },
        {
          onStart: () => seen.push(`start:${engine.foreground.active}`),
          onFirstToken: () => seen.push(`token:${engine.foreground.active}`),
          onEvent: () => events++,
        },
      );
      assert.ok(r.responseTokens.length >= 1);
      assert.ok(events > 0);
      // The wait ends at the first token (before the hook and every event), not at the answer's end.
      assert.deepEqual(seen, ["wait", "start:true", "first", "token:false"]);
      assert.equal(engine.foreground.active, false);
      // A request aborted before its first token ends its wait too.
      seen.length = 0;
      const ac = new AbortController();
      await assert.rejects(
        engine.generate({ messages, maxTokens: 8 }, { signal: ac.signal, onStart: () => ac.abort(), onFirstToken: () => seen.push("token") }),
      );
      assert.deepEqual(seen, ["wait", "first"]);
      assert.equal(engine.foreground.active, false);
    } finally {
      off();
    }
  });

  it("queues beyond the pool first-in first-out, and a queued request can be aborted", async () => {
    const order: number[] = [];
    const ac = new AbortController();
    const runs = [0, 1, 2, 3].map((i) =>
      engine.generate({ messages: [{ role: "user", content: `q${i}` }], maxTokens: 6, seed: i }, { signal: i === 2 ? ac.signal : undefined }).then(
        () => order.push(i),
        (err: unknown) => {
          assert.ok(err instanceof AbortedError);
          order.push(-i);
        },
      ),
    );
    assert.equal(engine.gate.queued, 3);
    ac.abort();
    await Promise.all(runs);
    assert.deepEqual(order, [-2, 0, 1, 3]);
    assert.equal(engine.gate.queued, 0);
    assert.equal(engine.gate.inflight, 0);
  });
});

describe("prompt rendering", () => {
  let engine: Engine;
  before(async () => {
    engine = await Engine.load({ modelPath: await tinyModel({ arch: "qwen2" }), backend: "cpu", threads: 1, maxContextSize: 1024, sequences: 1 });
  });
  after(async () => {
    await engine?.close();
  });

  it("renders tools, an assistant tool call with its result, developer and text-part messages through the chat template", () => {
    const { tokens } = engine.renderPrompt({
      messages: [
        { role: "developer", content: "Obey the rules." },
        {
          role: "user",
          content: [
            { type: "text", text: "Weather " },
            { type: "text", text: "in Paris?" },
          ],
        },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: "c1", content: "Sunny, 21 C" },
        { role: "user", content: "Thanks" },
      ],
      tools: [{ name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } } } }],
    });
    const text = engine.model.detokenize(tokens, true);
    for (const part of ["Obey the rules.", "Weather in Paris?", "get_weather", '"city"', "Paris", "Sunny, 21 C", "Thanks", "<|im_start|>assistant"])
      assert.ok(text.includes(part), `missing ${JSON.stringify(part)} in:\n${text}`);
    assert.ok(text.indexOf("Sunny, 21 C") < text.indexOf("Thanks"));
    assert.ok(text.trimEnd().endsWith("<|im_start|>assistant"), text.slice(-80));
  });

  it("throws ContextLengthError for a prompt that leaves no room", () => {
    assert.throws(
      () => engine.renderPrompt({ messages: [{ role: "user", content: "many words ".repeat(2000) }] }),
      (e: Error) => e.name === "ContextLengthError",
    );
  });
});

describe("tokens without text", () => {
  // llama.cpp's converter types the ids a tokenizer leaves unassigned (Qwen's [PAD<id>]) UNUSED,
  // and those detokenize to nothing; so do control tokens in an answer's text. A random-weight
  // model emits them: a stream that sent log-probs only with visible text sent the whole answer
  // at the end (the server-vs-direct bench then measured TTFT = the whole answer, decode NaN).
  let engine: Engine;
  let dir: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-textless-"));
    const spec = buildTinyModel({ arch: "qwen2" });
    const meta = spec.metadata as Array<[string, { type: GgufValueType; itemType?: GgufValueType; value: unknown }]>;
    const types = meta.find(([k]) => k === "tokenizer.ggml.token_type")![1];
    // Every normal token UNUSED (control tokens stay): the prompt tokenizes as before, every answer token has no text.
    types.value = (types.value as number[]).map((t) => (t === 1 ? 5 : t));
    assert.equal(types.itemType, GgufValueType.INT32);
    const file = path.join(dir, "textless.gguf");
    fs.writeFileSync(file, encodeGguf(spec));
    engine = await Engine.load({ modelPath: file, backend: "cpu", threads: 1, maxContextSize: 512, sequences: 1 });
  });
  after(async () => {
    await engine?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("streams each token's log-prob as it is generated", async () => {
    const events: GenerateEvent[] = [];
    const r = await engine.generate({ messages, maxTokens: 8, temperature: 0 }, { onEvent: (e) => events.push(e) });
    assert.ok(r.responseTokens.length >= 4, `only ${r.responseTokens.length} tokens`);
    assert.equal(r.text, "");
    const content = events.filter((e): e is Extract<GenerateEvent, { type: "content" }> => e.type === "content" && e.logprobs.length > 0);
    assert.deepEqual(
      content.map((e) => e.logprobs.map((l) => l.token)),
      r.responseTokens.map((t) => [t]),
    );
  });
});
