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

  it("two turns of `openclaw agent --local --session-id s1`: one session, two main turns (and one more per resend OpenClaw logs), next state, prefix cache reused", async (t) => {
    const first = "Hello, who are you?";
    const second = "Tell me a short story about a lighthouse.";
    const t0 = performance.now();
    const run1 = await runAgent(oc, env, first);
    const r1 = parseAgentJson(run1);
    const t1 = performance.now();
    const run2 = await runAgent(oc, env, second);
    const r2 = parseAgentJson(run2);
    // OpenClaw re-sends a turn it cannot use (the tiny random model's answer can be empty or all
    // reasoning: its embedded agent logs "— retrying N/M", with a continuation instruction or the
    // same prompt); each resend is a request, so a main turn, of its own here.
    const resendLines = (r: AgentRun) => r.stderr.split("\n").filter((l) => /— retrying \d+\/\d+/.test(l));
    const resent = [resendLines(run1).length, resendLines(run2).length];
    const why = [run1, run2].flatMap((r, i) => resendLines(r).map((l) => `turn ${i + 1}: ${l.slice(0, 300)}`)).join("\n") || "none logged";
    t.diagnostic(`turn 1: ${((t1 - t0) / 1000).toFixed(1)} s, usage ${JSON.stringify(r1.usage)}`);
    t.diagnostic(`turn 2: ${((performance.now() - t1) / 1000).toFixed(1)} s, usage ${JSON.stringify(r2.usage)}`);
    if (resent[0] + resent[1] > 0) t.diagnostic(`OpenClaw's resends: ${why}`);

    type SessionRow = { id: string; turnCount: number; mainTurnCount: number; source: string };
    type TurnRow = { type: string; text: string; nextState: Array<{ role: string; content: unknown }> | null };
    const sessions = (await api("/api/sessions")).sessions as SessionRow[];
    const requests = 2 + resent[0] + resent[1];
    assert.equal(
      sessions.reduce((n, x) => n + x.mainTurnCount, 0),
      requests,
      `every request OpenClaw sent is one main turn: ${JSON.stringify(sessions)}; its resends: ${why}`,
    );
    // Without resends: one session of exactly the two turns.
    if (requests === 2) assert.equal(sessions.length, 1, `expected one session, got ${JSON.stringify(sessions)}`);
    // The conversation OpenClaw went on with: the session that ends with the answer it printed for turn 2.
    let s: SessionRow | undefined;
    let turns: TurnRow[] = [];
    for (const x of sessions) {
      const d = (await api(`/api/sessions/${encodeURIComponent(x.id)}`)).turns as TurnRow[];
      if (d.at(-1)?.text.trim() === r2.text.trim()) [s, turns] = [x, d];
    }
    assert.ok(s, `no session ends with OpenClaw's turn-2 answer ${JSON.stringify(r2.text)}: ${JSON.stringify(sessions)}; its resends: ${why}`);
    assert.equal(s.source, "outside");
    // Turn 1, turn 2 and turn 2's resends that continue the conversation (a same-prompt resend of turn 1 starts another).
    assert.ok(turns.length >= 2 && turns.length <= 2 + resent[1], `${turns.length} turns: ${JSON.stringify(turns.map((x) => x.text.slice(0, 40)))}`);
    assert.ok(
      turns.every((x) => x.type === "main"),
      JSON.stringify(turns.map((x) => x.type)),
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
    assert.equal(r2.text.trim(), turns.at(-1)!.text.trim());

    // Turn 1 came to an empty cache, unless OpenClaw resent it (a resend reuses its first try's prefix).
    if (resent[0] === 0) assert.equal(r1.usage.cacheRead, 0);
    // Turn 2's prefill reused turn 1's KV cache (OpenClaw reads usage.prompt_tokens_details.cached_tokens):
    // the whole system prompt and tools, i.e. most of a prompt this long.
    assert.ok(r2.usage.cacheRead > 0.8 * (r2.usage.cacheRead + r2.usage.input), `turn 2 usage ${JSON.stringify(r2.usage)}`);
  });
});
