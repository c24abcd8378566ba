import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { clawrlBin, repoRoot, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

describe("clawrl serve --model <tiny model>", () => {
  let child: ChildProcess;
  let client: OpenAI;
  let out = "";
  before(async () => {
    const model = await tinyModel({ arch: "qwen2" });
    child = spawn(
      process.execPath,
      [clawrlBin, "serve", "--model", model, "--port", "0", "--data-dir", tempDir("clawrl-serve-"), "--token", "serve-test-token"],
      {
        cwd: repoRoot,
        env: { ...process.env, CLAWRL_THREADS: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const base = await new Promise<string>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        const m = /API base:\s+(\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      child.on("exit", (code) => reject(new Error(`serve exited with ${code}:\n${out}`)));
    });
    client = new OpenAI({ baseURL: base, apiKey: "serve-test-token", maxRetries: 0 });
  });
  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  });

  it("answers the openai client, streaming and not, with and without tools", async () => {
    const models = await client.models.list();
    const model = models.data[0].id;
    const plain = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 5 });
    assert.equal(plain.choices[0].message.role, "assistant");
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const c of stream) if (c.usage) usage = c.usage;
    assert.ok(usage && usage.completion_tokens >= 1);
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
      { type: "function", function: { name: "exec", parameters: { type: "object", properties: { cmd: { type: "string" } } } } },
    ];
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: "user", content: "run ls" }], tools, tool_choice: "required", max_tokens: 120 })
      .withResponse();
    assert.ok(response.headers.get("x-clawrl-session-id") && response.headers.get("x-clawrl-turn-id"));
    assert.equal(response.headers.get("x-clawrl-adapter"), "base");
    const call = data.choices[0].message.tool_calls?.[0];
    assert.ok(call && call.type === "function" && call.function.name === "exec");
    assert.equal(typeof JSON.parse(call.function.arguments), "object");
    const auto = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hello" }], tools, max_tokens: 8 });
    assert.ok(["stop", "length", "tool_calls"].includes(auto.choices[0].finish_reason));
  });
});
