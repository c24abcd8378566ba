/**
 * The sampling fields other servers accept (penalties, logit_bias, top_k, min_p, repeat_penalty):
 * accepted, honoured on both sampling paths (llama.cpp's sampler, and JS when top log-probs are
 * asked), recorded with the turn, and the recorded log-probs still the model's own (temperature 1,
 * no penalty), which the trainer recomputes.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Token } from "node-llama-cpp";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import type { SamplingUsed } from "../../electron/core/inference/engine.js";
import { startTinyCore } from "./helpers.js";

describe("sampling fields on /v1/chat/completions", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore());
  });
  after(async () => {
    await core?.close();
  });

  /** One answer and its recorded turn. */
  const answer = async (extra: Record<string, unknown>) => {
    const { data, response } = await client.chat.completions
      .create({
        model: modelId,
        messages: [{ role: "user", content: "Tell me a story about a cat." }],
        max_tokens: 24,
        ...extra,
      } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    const rec = core.store.readTurn(response.headers.get("x-clawrl-turn-id")!);
    // The store's SamplingRecord type names only the original four fields; the line holds what the engine used.
    const sampling = rec.sampling as SamplingUsed;
    return { data, rec, sampling, tokens: rec.responseTokens.filter((t) => !core.engine!.model.isEogToken(t as Token)) };
  };

  it("logit_bias -100 bans a token: it never appears over many samples, on either sampling path", async () => {
    // The tokens the model likes most here: what greedy and a few samples write.
    const counts = new Map<number, number>();
    for (const seed of [0, 1, 2, 3]) for (const t of (await answer({ temperature: seed === 0 ? 0 : 1, seed })).tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
    const banned = [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([t]) => t);
    assert.ok(counts.get(banned[0])! >= 3, "the banned tokens are ones the model writes");
    const logit_bias = Object.fromEntries(banned.map((t) => [String(t), -100]));
    for (let seed = 10; seed < 22; seed++) {
      const js = seed % 3 === 0; // top log-probs: sampled in JS
      const { tokens, sampling } = await answer({ temperature: seed % 2 ? 1.3 : 0, seed, logit_bias, ...(js ? { logprobs: true, top_logprobs: 2 } : {}) });
      for (const t of banned) assert.ok(!tokens.includes(t), `seed ${seed}: banned token ${t} in ${tokens.join(",")}`);
      assert.deepEqual(sampling.logitBias, Object.fromEntries(banned.map((t) => [t, -100])));
    }
  });

  it("logit_bias +100 makes a token the answer; top_k 1 and min_p 1 make any temperature greedy", async () => {
    const greedy = await answer({ temperature: 0 });
    const favourite = greedy.tokens.find((t) => t !== greedy.tokens[0]) ?? greedy.tokens[0];
    const forced = await answer({ temperature: 1, seed: 5, logit_bias: { [favourite]: 100 }, max_tokens: 8 });
    assert.deepEqual(forced.tokens, Array(forced.tokens.length).fill(favourite));
    assert.ok(forced.tokens.length === 8);
    for (const extra of [{ top_k: 1 }, { min_p: 1 }, { top_k: 1, logprobs: true }]) {
      const a = await answer({ temperature: 1.8, seed: 9, ...extra });
      assert.deepEqual(a.tokens, greedy.tokens, JSON.stringify(extra));
    }
  });

  it("penalties change the answer the same way on both paths, are recorded, and the log-probs stay the model's", async () => {
    const penalties = { frequency_penalty: 1.2, presence_penalty: 0.6, repeat_penalty: 1.8 };
    const plain = await answer({ temperature: 0, max_tokens: 32 });
    const native = await answer({ temperature: 0, max_tokens: 32, ...penalties });
    const js = await answer({ temperature: 0, max_tokens: 32, ...penalties, logprobs: true });
    assert.notDeepEqual(native.tokens, plain.tokens, "the penalties change the greedy answer");
    assert.deepEqual(js.tokens, native.tokens, "the JS path applies them as llama.cpp does");
    const repeats = (ts: number[]) => ts.length - new Set(ts).size;
    assert.ok(repeats(native.tokens) < repeats(plain.tokens), `fewer repeats: ${repeats(native.tokens)} vs ${repeats(plain.tokens)}`);
    for (const s of [native.sampling, js.sampling]) {
      assert.equal(s.frequencyPenalty, 1.2);
      assert.equal(s.presencePenalty, 0.6);
      assert.equal(s.repeatPenalty, 1.8);
    }
    const sampled = await answer({ temperature: 0.9, seed: 4, top_k: 40, min_p: 0.02, ...penalties });
    assert.equal(sampled.sampling.topK, 40);
    assert.equal(sampled.sampling.minP, 0.02);
    // The recorded log-probs are the model's temperature-1 ones, penalties or not: what scoring the text gives.
    for (const r of [native.rec, js.rec, sampled.rec]) {
      const scored = await core.engine!.scoreTokens([...r.promptTokens, ...r.responseTokens] as Token[]);
      const tail = scored.logprobs.slice(-r.responseTokens.length);
      r.tokenLogprobs.forEach((lp, i) => assert.ok(Math.abs(lp - tail[i]) < 2e-3, `token ${i}: ${lp} vs ${tail[i]}`));
    }
  });

  it("without the fields nothing extra is recorded", async () => {
    const { rec } = await answer({ temperature: 0.5, seed: 1 });
    assert.deepEqual(Object.keys(rec.sampling).sort(), ["maxTokens", "seed", "temperature", "topP"]);
  });
});
