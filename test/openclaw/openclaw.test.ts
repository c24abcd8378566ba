import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { INTERNAL_BEGIN } from "../../electron/core/rollout/messages.js";
import { repoRoot, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { ensureOpenclaw, type OpenclawInstall } from "./installOpenclaw.js";

/**
 * The real OpenClaw client (installed from npm with its own Node 24) against our server with a
 * tiny model, configured with the Settings page's snippet: two turns of one session, without
 * any rl headers. No skip: when OpenClaw cannot be installed this test fails with npm's output.
 */

// The tiny vocabulary spends about one token per character, and OpenClaw sends ~50,000
// characters (system prompt + tool schemas): the model declares a 64k context, served in full.
const CONTEXT = 65536;
const TURN_TIMEOUT_MS = 25 * 60_000; // a CPU prefill of ~36k tokens on a loaded 2-core machine

type SnippetFn = (apiBase: string, token: string, modelId: string, contextWindow: number) => string;

/** The exact snippet the Settings page shows (renderer code, loaded at run time: it is outside this tsconfig). */
async function settingsSnippet(): Promise<SnippetFn> {
  const mod = path.join(repoRoot, "renderer", "src", "api", "openclawSnippet.ts");
  return ((await import(mod)) as { openClawSnippet: SnippetFn }).openClawSnippet;
}

interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runAgent(oc: OpenclawInstall, env: NodeJS.ProcessEnv, message: string): Promise<AgentRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(oc.node, [oc.entry, "agent", "--local", "--message", message, "--session-id", "s1", "--json"], { env, cwd: env.HOME });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), TURN_TIMEOUT_MS);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** OpenClaw's --json result: the reply's text and what our usage told it. */
function parseAgentJson(run: AgentRun): { text: string; usage: { input: number; cacheRead: number } } {
  assert.equal(run.code, 0, `openclaw agent exited ${run.code}:\n${run.stderr.slice(-4000)}`);
  // Prose may precede the JSON document on stdout; the document is the last top-level object.
  const at = run.stdout.indexOf("{\n");
  assert.ok(at >= 0, `no JSON on stdout:\n${run.stdout.slice(-2000)}`);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed fields are checked one by one below
  const j: any = JSON.parse(run.stdout.slice(at));
  return { text: j.payloads?.[0]?.text ?? "", usage: j.meta?.agentMeta?.lastCallUsage ?? j.meta?.agentMeta?.usage };
}

describe("OpenClaw (real client from npm) against the server", { timeout: 2 * TURN_TIMEOUT_MS + 20 * 60_000 }, () => {
  let oc: OpenclawInstall;
  let core: RunningCore;
  let env: NodeJS.ProcessEnv;
  const api = async (p: string) => {
    const r = await fetch(`${core.url}${p}`, { headers: { authorization: `Bearer ${core.token}` } });
    assert.equal(r.status, 200, `${p}: ${r.status}`);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are read structurally below
    return (await r.json()) as any;
  };

  before(async () => {
    oc = ensureOpenclaw(); // throws (the suite fails) when npm cannot install it
    const model = await tinyModel({ arch: "qwen2", contextLength: CONTEXT });
    const dir = tempDir("clawrl-openclaw-");
    // Default context: the model's full trained context (the engine fits it to memory).
    core = await startCore({ model, dataDir: path.join(dir, "data"), token: "test-token-openclaw", uiDir: "", engine: { threads: 1, backend: "cpu" } });
    const info = core.engine!.info();
    const configPath = path.join(dir, "openclaw.json");
    fs.writeFileSync(configPath, (await settingsSnippet())(core.url, core.token, info.modelId, info.contextSize));
    const home = path.join(dir, "home");
    fs.mkdirSync(home, { recursive: true });
    env = { ...process.env, HOME: home, OPENCLAW_CONFIG_PATH: configPath, OPENCLAW_STATE_DIR: path.join(dir, "state"), NO_COLOR: "1" };
  });
  after(async () => {
    await core?.close();
  });

  it("serves the model's full trained context by default", () => {
    const info = core.engine!.info();
    assert.equal(info.trainContextSize, CONTEXT);
    assert.equal(info.contextSize, CONTEXT);
  });

  it("two turns of `openclaw agent --local --session-id s1`: one session, two main turns, next state, prefix cache reused", async (t) => {
    const first = "Hello, who are you?";
    const second = "Tell me a short story about a lighthouse.";
    const t0 = performance.now();
    const run1 = await runAgent(oc, env, first);
    const r1 = parseAgentJson(run1);
    const t1 = performance.now();
    const run2 = await runAgent(oc, env, second);
    const r2 = parseAgentJson(run2);
    // OpenClaw re-sends a turn it cannot use (empty, reasoning-only or missing answer: its embedded
    // agent logs "retrying N/M"); each resend is a request of its own here. Named in the failures below.
    const retries = [run1, run2].flatMap((r, i) =>
      r.stderr
        .split("\n")
        .filter((l) => /retrying|retries exhausted|incomplete turn/.test(l))
        .map((l) => `turn ${i + 1}: ${l.slice(0, 300)}`),
    );
    t.diagnostic(`turn 1: ${((t1 - t0) / 1000).toFixed(1)} s, usage ${JSON.stringify(r1.usage)}`);
    t.diagnostic(`turn 2: ${((performance.now() - t1) / 1000).toFixed(1)} s, usage ${JSON.stringify(r2.usage)}`);
    for (const line of retries) t.diagnostic(`OpenClaw ${line}`);

    const sessions = (await api("/api/sessions")).sessions as Array<{ id: string; turnCount: number; mainTurnCount: number; source: string }>;
    assert.equal(sessions.length, 1, `expected one session, got ${JSON.stringify(sessions)}; OpenClaw's retries: ${retries.join("\n") || "none logged"}`);
    const s = sessions[0];
    assert.deepEqual([s.turnCount, s.mainTurnCount, s.source], [2, 2, "outside"]);
    const detail = await api(`/api/sessions/${encodeURIComponent(s.id)}`);
    const turns = detail.turns as Array<{ type: string; text: string; nextState: Array<{ role: string; content: unknown }> | null }>;
    assert.deepEqual(
      turns.map((t) => t.type),
      ["main", "main"],
    );

    // Turn 1's next state is the user message OpenClaw appended after our answer (its
    // internal-context block is context, not feedback).
    const ns = turns[0].nextState;
    assert.ok(ns && ns.length === 1, `next state ${JSON.stringify(ns)}`);
    assert.equal(ns[0].role, "user");
    const nsText = typeof ns[0].content === "string" ? ns[0].content : JSON.stringify(ns[0].content);
    assert.ok(nsText.includes(second), `next state ${nsText}`);
    assert.ok(!nsText.includes(INTERNAL_BEGIN));
    assert.ok(!JSON.stringify(turns[0].nextState).includes(first));

    // What OpenClaw printed is what we answered.
    assert.equal(r1.text.trim(), turns[0].text.trim());
    assert.equal(r2.text.trim(), turns[1].text.trim());

    // Turn 2's prefill reused turn 1's KV cache (OpenClaw reads usage.prompt_tokens_details.cached_tokens):
    // the whole system prompt and tools, i.e. most of a prompt this long.
    assert.equal(r1.usage.cacheRead, 0, `turn 1 read a cached prefix (a resent request?); OpenClaw's retries: ${retries.join("\n") || "none logged"}`);
    assert.ok(r2.usage.cacheRead > 0.8 * (r2.usage.cacheRead + r2.usage.input), `turn 2 usage ${JSON.stringify(r2.usage)}`);
  });
});
