import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { scriptedJudge } from "../judge/fixtures.js";
import { filesystemServer, until, writeMcpJson } from "./servers.js";

const DECLINED = "The user declined this call.";

/**
 * Learning from tool outcomes (method.md): the tool result (or the user's denial) in the next
 * /v1 request is the next state of the turn that made the call, the judge reads it, and the
 * turn's sample trains the call's own tokens. The tiny model never picks a tool by itself: the
 * calls are forced (tool_choice named), the call runs through /api/tools/call on a real server.
 */
describe("a tool call's outcome teaches the turn that made it", () => {
  let core: RunningCore;
  let judge: Awaited<ReturnType<typeof scriptedJudge>>;
  let folder: string;

  before(async () => {
    const dataDir = tempDir();
    folder = tempDir("clawrl-mcp-learn-");
    fs.writeFileSync(path.join(folder, "notes.txt"), "buy milk\n");
    writeMcpJson(dataDir, { mcpServers: { files: filesystemServer(folder) } });
    judge = await scriptedJudge((kind) => (kind === "prm" ? "It worked. \\boxed{1}" : "\\boxed{-1}"));
    core = await startCore({
      model: await tinyModel({ arch: "qwen2" }),
      dataDir,
      uiDir: "",
      training: false,
      engine: { maxContextSize: 1024, sequences: 2, threads: 1, backend: "cpu" },
    });
    // Every turn trains (no held-back slice), one judge vote from the scripted endpoint.
    core.store.updateSettings({ heldBackShare: 0, judgeVotes: 1, judgeSource: { kind: "endpoint", baseUrl: judge.baseUrl, model: "judge" } });
  });
  after(async () => {
    await core?.close();
    await judge?.close();
  });

  async function chat(sessionId: string, messages: unknown[], extra: Record<string, unknown> = {}) {
    const res = await fetch(`${core.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json", "x-session-id": sessionId, "x-turn-type": "main" },
      body: JSON.stringify({ messages, seed: 3, max_tokens: 120, ...extra }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return {
      body: (await res.json()) as {
        choices: Array<{
          message: { content: string | null; tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }> };
        }>;
      },
      turnId: res.headers.get("x-clawrl-turn-id")!,
    };
  }

  async function forcedCall(sessionId: string) {
    // The one tool the turn needs (all 14 of the filesystem server's would not fit the tiny model's context).
    const tools = (await callApi(core, "GET", "/api/tools/openai")).body.tools.filter(
      (t: { function: { name: string } }) => t.function.name === "files__list_directory",
    );
    assert.equal(tools.length, 1);
    const user = { role: "user", content: "What is in my notes folder?" };
    const first = await chat(sessionId, [user], { tools, tool_choice: { type: "function", function: { name: "files__list_directory" } } });
    const msg = first.body.choices[0].message;
    assert.equal(msg.tool_calls?.length, 1);
    assert.equal(msg.tool_calls[0].function.name, "files__list_directory");
    return { tools, user, msg, call: msg.tool_calls[0], turnId: first.turnId };
  }

  it("an approved call: the result is the next state, the judge reads it, the sample trains the call's tokens", async () => {
    const { tools, user, msg, call, turnId } = await forcedCall("s-approved");
    const result = await callApi(core, "POST", "/api/tools/call", {
      name: call.function.name,
      arguments: call.function.arguments,
      approval: "once",
      callId: call.id,
      sessionId: "s-approved",
      turnId,
    });
    assert.equal(result.status, 200);
    const toolMessage = { role: "tool", tool_call_id: call.id, content: result.body.content };
    await chat("s-approved", [user, { role: "assistant", content: msg.content, tool_calls: msg.tool_calls }, toolMessage], { tools, max_tokens: 4 });

    assert.deepEqual(core.store.readNextState(turnId), [toolMessage]);
    await until(() => core.store.turnView(turnId).reward !== null, 30_000, "the judge's reward");
    const prm = judge.requests.filter((r) => r.kind === "prm").map((r) => r.body.messages[1].content as string);
    const read = prm.find((p) => p.includes("(calls tool files__list_directory"));
    assert.ok(read, "the judge read the call");
    assert.ok(read.includes(`=== What came next ===\n[tool result] ${result.body.content.slice(0, 200)}`), read);

    const turn = core.store.readTurn(turnId);
    await until(() => core.samples.get(turnId) !== undefined, 10_000, "the turn's sample");
    const sample = core.samples.get(turnId)!.sample;
    assert.equal(sample.reward, 1);
    assert.deepEqual(sample.response_tokens, turn.responseTokens);
    const trained = sample.response_tokens.map((t) => core.engine!.tokenText(t)).join("");
    assert.ok(trained.includes("files__list_directory"), `trained tokens hold the call's name: ${trained}`);
    const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
    assert.match(trained, /"arguments": \{/);
    // Token by token, a character split across tokens decodes as U+FFFD: compare the argument's ASCII runs.
    for (const v of Object.values(args)) {
      if (typeof v !== "string") continue;
      for (const run of v.split(/[^\x20-\x7e]+/).filter((r) => r.length >= 3))
        assert.ok(trained.includes(JSON.stringify(run).slice(1, -1)), `trained tokens hold the argument's '${run}': ${trained}`);
    }
  });

  it("a denied call: the denial is the next state and the judge reads it; the server never saw the call", async () => {
    const { tools, user, msg, call, turnId } = await forcedCall("s-denied");
    const denial = { role: "tool", tool_call_id: call.id, content: DECLINED };
    await chat("s-denied", [user, { role: "assistant", content: msg.content, tool_calls: msg.tool_calls }, denial], { tools, max_tokens: 4 });
    assert.deepEqual(core.store.readNextState(turnId), [denial]);
    await until(() => core.store.turnView(turnId).reward !== null, 30_000, "the judge's reward");
    const read = judge.requests.map((r) => r.body.messages[1].content as string).find((p) => p.includes(`[tool result] ${DECLINED}`));
    assert.ok(read, "the judge read the denial");
    // The judge is told a declined call is a correction.
    assert.match(read, /correction: .*the user declined a tool call the assistant made/);
    const log = fs.readFileSync(path.join(core.paths.logs, "tools.jsonl"), "utf8");
    assert.ok(!log.includes(turnId), "no call of the denied turn ran");
  });
});
