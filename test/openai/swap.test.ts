import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { writeLoraAdapter } from "../inference/loraFixture.js";
import { startTinyCore } from "./helpers.js";

describe("adapter swap under concurrent streaming load", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore({ sequences: 4 }));
  });
  after(async () => {
    await core?.close();
  });

  it("completes every stream in full while the adapter is swapped repeatedly", async () => {
    const dir = tempDir("clawrl-swap-");
    const src = path.join(dir, "src.gguf");
    writeLoraAdapter(src, await tinyModel({ arch: "qwen2" }), { seed: 5 });
    const versions = new Set(["base"]);

    async function oneStream(i: number) {
      const { data: stream, response } = await client.chat.completions
        .create({
          model: modelId,
          messages: [{ role: "user", content: `request ${i}` }],
          max_tokens: 40,
          seed: i,
          stream: true,
          logprobs: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      const adapter = response.headers.get("x-clawrl-adapter")!;
      let tokens = 0;
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
          tokens += c.logprobs?.content?.length ?? 0;
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
      return { adapter, tokens, finish, usage, turnId: response.headers.get("x-clawrl-turn-id")! };
    }

    const streams: Array<Promise<Awaited<ReturnType<typeof oneStream>>>> = [];
    const swaps: Array<{ pauseMs: number }> = [];
    for (let round = 0; round < 6; round++) {
      for (let k = 0; k < 4; k++) streams.push(oneStream(round * 4 + k));
      const file = path.join(dir, `ckpt-${round}.gguf`);
      fs.copyFileSync(src, file);
      const version = `ckpt-${round}`;
      versions.add(version);
      swaps.push(await core.engine!.swapAdapter(round % 3 === 2 ? null : file, round % 3 === 2 ? "base" : version));
    }
    const results = await Promise.all(streams);
    assert.equal(results.length, 24);
    for (const r of results) {
      assert.ok(r.finish === "stop" || r.finish === "length", `stream without finish_reason: ${JSON.stringify(r)}`);
      assert.ok(r.usage, "stream without usage");
      assert.equal(r.tokens, r.usage.completion_tokens, "truncated stream: fewer tokens than generated");
      if (r.finish === "length") assert.equal(r.tokens, 40);
      assert.ok(versions.has(r.adapter), r.adapter);
      assert.equal(core.store.readTurn(r.turnId).adapter, r.adapter);
    }
    assert.ok(new Set(results.map((r) => r.adapter)).size > 1, "every stream saw the same adapter");
    console.log(`pauses (ms): ${swaps.map((s) => s.pauseMs.toFixed(1)).join(", ")}`);
  });
});
