import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Token } from "node-llama-cpp";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { pickSequence } from "../../electron/core/inference/adapterGate.js";
import { startTinyCore } from "../openai/helpers.js";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/**
 * The KV cache kept per conversation: a bounded pool of sequences (2 here); a conversation's
 * next turn goes to the sequence holding its prefix, and a new conversation takes the least
 * recently used one. Seen from outside through usage.prompt_tokens_details.cached_tokens.
 */
describe("prefix cache pool: per-conversation reuse, least recently used evicted", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore({ sequences: 2, maxContextSize: 2048 }));
  });
  after(async () => {
    await core?.close();
  });

  /** A conversation with its own long system prompt; `turn()` sends the history plus a new message. */
  function conversation(name: string) {
    const history: Msg[] = [{ role: "system", content: `You are ${name}. ${`${name} keeps notes. `.repeat(30)}` }];
    return async (user: string) => {
      history.push({ role: "user", content: user });
      const r = await client.chat.completions.create({ model: modelId, messages: history, max_tokens: 3, temperature: 0 });
      history.push({ role: "assistant", content: r.choices[0].message.content ?? "" });
      return { prompt: r.usage!.prompt_tokens, cached: r.usage!.prompt_tokens_details!.cached_tokens! };
    };
  }

  it("keeps two conversations' caches, evicts the least recently used for a third", async () => {
    const a = conversation("Alice");
    const b = conversation("Bob");
    const c = conversation("Carol");
    const a1 = await a("first question");
    const b1 = await b("first question");
    // Only the chat template's opening ("<|im_start|>system\nYou are ") can be shared before a first turn.
    assert.ok(a1.cached < 20 && b1.cached < 20, `${a1.cached} ${b1.cached}`);
    const a2 = await a("second question");
    assert.ok(a2.cached >= a1.prompt - 2, `A's second turn reused ${a2.cached} of its ${a1.prompt}-token first prompt`);
    // Least recently used now: B's sequence. A third conversation takes it.
    await c("first question");
    const a3 = await a("third question");
    assert.ok(a3.cached >= a2.prompt - 2, `A kept its cache: ${a3.cached} of ${a2.prompt}`);
    const b2 = await b("second question");
    assert.ok(b2.cached < 20, `B's cache was evicted, yet ${b2.cached} tokens were reused`);
  });
});

describe("pickSequence", () => {
  const seq = (...t: number[]) => ({ contextTokens: t as Token[] });
  const pick = (free: Array<{ contextTokens: Token[] }>, prompt: number[]) => pickSequence(free, prompt as Token[]);
  const system = Array.from({ length: 100 }, (_, i) => i + 1000);
  it("a new conversation reuses another's long shared system prompt, never a conversation for a short common opening", () => {
    // free: [LRU other conversation with the same system prompt + 30 tokens of history, empty]
    assert.equal(pick([seq(...system, ...Array(30).fill(7)), seq()], [...system, 5, 6]), 0);
    // only 3 tokens in common with a 100-token conversation: the empty sequence instead
    assert.equal(pick([seq(1, 2, 3, ...system), seq()], [1, 2, 3, 9]), 1);
    // nothing worth reusing anywhere: the least recently used
    assert.equal(pick([seq(1, ...system), seq(2, ...system)], [3, 4]), 0);
    // a conversation's own sequence, wherever it is in the list
    assert.equal(pick([seq(9, 9), seq(...system, 1), seq()], [...system, 1, 2]), 1);
  });
});
