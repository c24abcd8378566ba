import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import { OpenAI as LangChainOpenAI } from "@langchain/openai";
import type { RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { startTinyCore } from "./helpers.js";

describe("POST /v1/completions: streaming, array prompts, strict fields, with the real clients", () => {
  let core: RunningCore;
  let client: OpenAI;
  let model: string;
  before(async () => {
    ({ core, client, modelId: model } = await startTinyCore());
  });
  after(async () => {
    await core?.close();
  });

  it("openai-node streaming: text_completion chunks join into the unstreamed answer; usage last when asked", async () => {
    const params = { model, prompt: "Once upon a time", max_tokens: 12, seed: 7, temperature: 1 };
    const plain = await client.completions.create(params);
    const { data: stream, response } = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }).withResponse();
    assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
    const turnId = response.headers.get("x-clawrl-turn-id");
    assert.ok(turnId);
    let text = "";
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let chunks = 0;
    for await (const c of stream) {
      assert.equal(c.object, "text_completion");
      assert.equal(c.id, `cmpl-${turnId}`);
      if (c.usage) {
        assert.equal(c.choices.length, 0);
        usage = c.usage;
        continue;
      }
      chunks++;
      assert.equal(c.choices[0].index, 0);
      text += c.choices[0].text;
      if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
    }
    assert.ok(chunks >= 2, `${chunks} chunks`);
    assert.equal(text, plain.choices[0].text, "same seed, same answer, streamed or not");
    assert.equal(finish, plain.choices[0].finish_reason);
    assert.deepEqual({ p: usage?.prompt_tokens, c: usage?.completion_tokens }, { p: plain.usage!.prompt_tokens, c: plain.usage!.completion_tokens });
    // The streamed turn is recorded, in its session.
    const sessionId = response.headers.get("x-clawrl-session-id")!;
    const s = await callApi(core, "GET", `/api/sessions/${encodeURIComponent(sessionId)}`);
    assert.equal(s.status, 200);
    const turn = (s.body.turns as Array<{ turnId: string; text: string; messages: Array<{ content: string }> }>).find((t) => t.turnId === turnId);
    assert.ok(turn, "the streamed turn is recorded");
    assert.equal(turn.text, text);
    assert.equal(turn.messages[0].content, "Once upon a time");
  });

  it("openai-node array prompt: one choice per prompt with its index, each a recorded turn; streamed too", async () => {
    const prompts = ["The cat", "A dog", "The cat"];
    const { data: r, response } = await client.completions.create({ model, prompt: prompts, max_tokens: 6, temperature: 0 }).withResponse();
    assert.equal(r.choices.length, 3);
    assert.deepEqual(
      r.choices.map((c) => c.index),
      [0, 1, 2],
    );
    assert.equal(r.choices[0].text, r.choices[2].text, "greedy: the same prompt, the same answer");
    const turnIds = response.headers.get("x-clawrl-turn-id")!.split(",");
    assert.equal(turnIds.length, 3);
    for (const [i, id] of turnIds.entries()) {
      const t = core.store.readTurn(id);
      assert.ok(t, `turn ${id} recorded`);
      assert.equal(t.messages[0].content, prompts[i]);
    }
    // usage covers all prompts
    const recorded = turnIds.map((id) => core.store.readTurn(id));
    assert.equal(
      r.usage!.completion_tokens,
      recorded.reduce((n, t) => n + t.responseTokens.length, 0),
    );
    assert.equal(
      r.usage!.prompt_tokens,
      recorded.reduce((n, t) => n + t.promptTokens.length, 0),
    );
    // Each prompt answered alone gives its choice's text.
    const alone = await client.completions.create({ model, prompt: "A dog", max_tokens: 6, temperature: 0 });
    assert.equal(alone.choices[0].text, r.choices[1].text);

    const stream = await client.completions.create({ model, prompt: prompts, max_tokens: 6, temperature: 0, stream: true });
    const texts = ["", "", ""];
    const finishes: Array<string | null> = [null, null, null];
    for await (const c of stream)
      for (const ch of c.choices) {
        texts[ch.index] += ch.text;
        if (ch.finish_reason) finishes[ch.index] = ch.finish_reason;
      }
    assert.deepEqual(
      texts,
      r.choices.map((c) => c.text),
    );
    assert.ok(finishes.every((f) => f === "stop" || f === "length"));
  });

  it("token-id prompts, streamed logprobs, and echo scoring of several prompts", async () => {
    const ids = core.engine!.model.tokenize("Once upon a time", false);
    const byText = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 5, temperature: 0 });
    const byIds = await client.completions.create({ model, prompt: ids, max_tokens: 5, temperature: 0 });
    assert.equal(byIds.choices[0].text, byText.choices[0].text);
    const stream = await client.completions.create({ model, prompt: "Once", max_tokens: 5, temperature: 0, logprobs: 2, stream: true });
    const tokens: string[] = [];
    let text = "";
    for await (const c of stream) {
      const ch = c.choices[0];
      text += ch.text;
      if (ch.logprobs) {
        tokens.push(...ch.logprobs.tokens!);
        assert.ok(ch.logprobs.token_logprobs!.every((l) => l <= 0));
      }
    }
    assert.equal(tokens.join(""), text);
    const scored = await client.completions.create({ model, prompt: ["a b c", "d e"], max_tokens: 0, echo: true, logprobs: 0 });
    assert.deepEqual(
      scored.choices.map((c) => c.text),
      ["a b c", "d e"],
    );
    assert.ok(scored.choices.every((c) => c.logprobs!.tokens!.join("") === c.text));
  });

  it("refuses unknown and unsupported fields as chat does", async () => {
    for (const [body, param, code] of [
      [{ prompt: "x", bogus: true }, "bogus", "unsupported_parameter"],
      [{ prompt: "x", response_format: { type: "xml" } }, "response_format.type", "invalid_value"],
      [{ prompt: "x", n: 2 }, "n", "invalid_value"],
      [{ prompt: "x", best_of: 3 }, "best_of", "invalid_value"],
      [{ prompt: "x", suffix: "end" }, "suffix", "invalid_value"],
      [{ prompt: [] }, "prompt", "invalid_value"],
      [{ prompt: 7 }, "prompt", "invalid_value"],
      [{ prompt: "x", echo: true, max_tokens: 0, stream: true }, "stream", null],
      [{ prompt: "x", stream_options: { include_usage: true } }, "stream_options", null],
    ] as const) {
      const r = await callApi(core, "POST", "/v1/completions", body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.param, param, JSON.stringify(r.body));
      assert.equal(r.body.error.code, code, JSON.stringify(r.body));
    }
  });

  it("takes chat's sampling fields: logit_bias +100 forces a token, top_k 1 is greedy, penalties are accepted and recorded", async () => {
    /** One completion: its text and its recorded turn (the tokens the model wrote, the sampling used). */
    const complete = async (extra: Record<string, unknown>) => {
      const { data, response } = await client.completions
        .create({ model, prompt: "The cat", max_tokens: 6, ...extra } as unknown as OpenAI.Completions.CompletionCreateParamsNonStreaming)
        .withResponse();
      const rec = core.store.readTurn(response.headers.get("x-clawrl-turn-id")!.split(",")[0]);
      return {
        text: data.choices[0].text,
        tokens: rec.responseTokens.filter((t) => !core.engine!.model.isEogToken(t as never)),
        sampling: rec.sampling as { frequencyPenalty?: number; presencePenalty?: number },
      };
    };
    const greedy = await complete({ temperature: 0 });
    const favourite = greedy.tokens.find((t) => t !== greedy.tokens[0]) ?? greedy.tokens[0];
    const forced = await complete({ max_tokens: 5, temperature: 1, seed: 3, logit_bias: { [String(favourite)]: 100 } });
    assert.deepEqual(forced.tokens, Array(5).fill(favourite));
    const topK = await complete({ temperature: 1.8, seed: 9, top_k: 1 });
    assert.equal(topK.text, greedy.text);
    const penalised = await complete({ frequency_penalty: 1.2, presence_penalty: 0.5 });
    assert.deepEqual([penalised.sampling.frequencyPenalty, penalised.sampling.presencePenalty], [1.2, 0.5]);
    const bad = await callApi(core, "POST", "/v1/completions", { prompt: "x", logit_bias: { [String(10_000_000)]: 1 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, "logit_bias");
  });

  it("LangChain's OpenAI class: its array prompts get one generation each", async () => {
    const llm = new LangChainOpenAI({ model, apiKey: core.token, configuration: { baseURL: `${core.url}/v1` }, maxTokens: 6, temperature: 0, maxRetries: 0 });
    const r = await llm.generate(["The cat", "A dog"]);
    assert.equal(r.generations.length, 2);
    const direct = await client.completions.create({ model, prompt: ["The cat", "A dog"], max_tokens: 6, temperature: 0 });
    assert.deepEqual(
      r.generations.map((g) => g[0].text),
      direct.choices.map((c) => c.text),
    );
    const one = await llm.invoke("A dog");
    assert.equal(one, direct.choices[1].text);
    // Streaming through LangChain too.
    const streamed = new LangChainOpenAI({
      model,
      apiKey: core.token,
      configuration: { baseURL: `${core.url}/v1` },
      maxTokens: 6,
      temperature: 0,
      maxRetries: 0,
      streaming: true,
    });
    let s = "";
    for await (const piece of await streamed.stream("The cat")) s += piece;
    assert.equal(s, direct.choices[0].text);
  });
});
