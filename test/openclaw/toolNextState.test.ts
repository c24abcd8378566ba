import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { startTinyCore } from "../openai/helpers.js";
import { internalContextMessage, openclawTools } from "./openclawShape.js";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/**
 * An agent loop as OpenClaw runs it, through the real /v1 route: our answer calls a tool
 * (streamed as tool_calls deltas), the client runs it and sends the result back as a `tool`
 * message; that result is the tool-calling turn's next state.
 */
describe("tool calls over /v1: streamed deltas, tool results as next state", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore({ maxContextSize: 4096 }));
  });
  after(async () => {
    await core?.close();
  });

  it("the tool result that follows a tool-calling answer becomes that turn's next state", async () => {
    const system: Msg = { role: "system", content: "You are an agent. Use the tools." };
    const user: Msg = { role: "user", content: "List the files here." };
    const { data: stream, response } = await client.chat.completions
      .create({
        model: modelId,
        messages: [system, user, internalContextMessage(1)],
        tools: openclawTools,
        tool_choice: { type: "function", function: { name: "ls" } },
        stream: true,
        stream_options: { include_usage: true },
        max_completion_tokens: 200,
        seed: 5,
      })
      .withResponse();
    const turnId = response.headers.get("x-clawrl-turn-id")!;
    const sessionId = response.headers.get("x-clawrl-session-id")!;
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    let deltas = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      for (const d of c.delta.tool_calls ?? []) {
        deltas++;
        calls[d.index] ??= { id: "", name: "", arguments: "" };
        if (d.id) calls[d.index].id = d.id;
        if (d.function?.name) calls[d.index].name += d.function.name;
        if (d.function?.arguments) calls[d.index].arguments += d.function.arguments;
      }
      finish = c.finish_reason ?? finish;
    }
    assert.equal(finish, "tool_calls");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, "ls");
    assert.ok(deltas > 1, `the call came in ${deltas} delta(s)`);
    assert.equal(typeof JSON.parse(calls[0].arguments), "object");

    // The client replays the call (its own JSON spacing) and sends the tool's output.
    const replay: Msg = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: calls[0].id, type: "function", function: { name: "ls", arguments: JSON.stringify(JSON.parse(calls[0].arguments), null, 1) } }],
    };
    const toolResult: Msg = { role: "tool", tool_call_id: calls[0].id, content: "README.md\npackage.json\nsrc" };
    const second = await client.chat.completions
      .create({
        model: modelId,
        messages: [system, user, replay, toolResult, internalContextMessage(2)],
        tools: openclawTools,
        max_completion_tokens: 4,
        seed: 6,
      })
      .withResponse();
    assert.equal(second.response.headers.get("x-clawrl-session-id"), sessionId);
    assert.ok(second.data.usage!.prompt_tokens_details!.cached_tokens! > 0, "the second request reused the first one's KV cache");

    const r = await fetch(`${core.url}/api/sessions/${encodeURIComponent(sessionId)}`, { headers: { authorization: `Bearer ${core.token}` } });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the session view is read structurally
    const detail: any = await r.json();
    const t1 = detail.turns.find((t: { turnId: string }) => t.turnId === turnId);
    assert.deepEqual(
      t1.toolCalls.map((c: { name: string }) => c.name),
      ["ls"],
    );
    assert.deepEqual(t1.nextState, [{ role: "tool", tool_call_id: calls[0].id, content: "README.md\npackage.json\nsrc" }]);
    assert.equal(detail.turns.length, 2);
  });
});
