// Tools in the app, end to end (issue 29): a real core with a tiny model and a real MCP server
// (@modelcontextprotocol/server-filesystem on a temp folder, started by the core from mcp.json),
// driven in headless Chromium. The Tools page lists the server and its tools; in the chat, the
// model's call is shown as a card, runs after Allow once, its result (the folder's files) goes
// back to the model and the answer goes on; a denied call never reaches the server.
//
// A tiny random model never chooses a tool by itself. As ui.test.ts caps the length of its
// answers, this test adds to the UI's first request what a model would decide: tool_choice names
// files__list_directory, and the tool's path parameter is held to the test folder (an enum), so
// the real model, under the core's grammar, writes that call. Everything else is what the UI
// sent, answered by the real core.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { repoRoot, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

const fsServer = path.join(repoRoot, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js");
const TOOL = "files__list_directory";
const DECLINED = "The user declined this call.";

interface WireMessage {
  role: string;
  content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}
interface ChatBody {
  messages: WireMessage[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: Record<string, unknown> } }[];
  [k: string]: unknown;
}

describe("Tools page and the agent loop in headless Chromium", { skip: browserMissing() ?? false, timeout: 1_800_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const dataDir = tempDir("clawrl-tools-e2e-");
  const folder = tempDir("clawrl-tools-folder-");
  const token = "tools-e2e-token-0123456789";
  const chatRequests: ChatBody[] = [];
  const toolCalls: Record<string, unknown>[] = [];
  const pageProblems: string[] = [];

  before(async () => {
    ensureRendererBuilt();
    fs.writeFileSync(path.join(folder, "alpha-notes.txt"), "first file\n");
    fs.writeFileSync(path.join(folder, "beta-plan.md"), "# second file\n");
    fs.mkdirSync(path.join(folder, "gamma-dir"));
    fs.writeFileSync(
      path.join(dataDir, "mcp.json"),
      JSON.stringify({ mcpServers: { files: { command: process.execPath, args: [fsServer, folder] } } }, null, 2),
    );
    const model = await tinyModel({ arch: "qwen2" });
    core = await startCore({ model, port: 0, dataDir, token });
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on("pageerror", (e) => pageProblems.push(`page error: ${e.message}`));
    page.on("request", (r: Request) => {
      if (r.url().endsWith("/api/tools/call") && r.method() === "POST") toolCalls.push(r.postDataJSON() as Record<string, unknown>);
    });
    await page.route("**/v1/chat/completions", (r) => {
      const body = r.request().postDataJSON() as ChatBody;
      chatRequests.push(structuredClone(body));
      // Short answers, repeatable draws (as ui.test.ts does).
      const sent: ChatBody = { ...body, max_tokens: 40, seed: 7 };
      const lastRole = body.messages[body.messages.length - 1]?.role;
      // The first step of an answer (the user spoke last): the call a model would choose.
      if (body.tools?.some((t) => t.function.name === TOOL) && lastRole === "user") {
        sent.tool_choice = { type: "function", function: { name: TOOL } };
        sent.tools = body.tools.map((t) =>
          t.function.name === TOOL
            ? {
                ...t,
                function: { ...t.function, parameters: { type: "object", properties: { path: { type: "string", enum: [folder] } }, required: ["path"] } },
              }
            : t,
        );
      }
      return r.continue({ postData: JSON.stringify(sent) });
    });
  });

  after(async () => {
    await browser?.close();
    await core?.close();
    fs.rmSync(folder, { recursive: true, force: true });
  });

  const api = async (p: string, init: RequestInit = {}) =>
    fetch(core.url + p, { ...init, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...(init.headers ?? {}) } });

  test("the Tools page lists the server, running, with its tools, and the config file", async () => {
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Tools" }).click();
    await page.getByRole("heading", { name: "Tools", level: 1 }).waitFor();
    const server = page.locator("section.tool-server").filter({ has: page.getByRole("heading", { name: "files" }) });
    await server.getByText("Running", { exact: true }).waitFor({ timeout: 60_000 });
    const tools = server.getByRole("list", { name: "Tools of files" });
    await tools.getByText("list_directory", { exact: true }).waitFor();
    assert.ok((await tools.locator("li").count()) >= 5, "the filesystem server's tools are listed");
    assert.match((await server.locator(".tool-server-summary").textContent()) ?? "", /index\.js/);
    assert.match((await page.locator(".tools-config").textContent()) ?? "", /mcp\.json/);
    assert.equal(await server.getByRole("switch", { name: "Use list_directory", exact: true }).isChecked(), true);
    await screenshot(page, "tools-page-1280-light");
  });

  test("a server whose command does not exist is listed as failed, in words; removing it asks first", async () => {
    await page.getByRole("radio", { name: "A program on this computer" }).check();
    await page.getByRole("textbox", { name: "Name", exact: true }).fill("broken");
    await page.getByRole("textbox", { name: "Command", exact: true }).fill("/nonexistent/clawrl-no-such-server");
    await page.getByRole("button", { name: "Add server" }).click();
    const server = page.locator("section.tool-server").filter({ has: page.getByRole("heading", { name: "broken" }) });
    await server.waitFor();
    // It starts when first needed: the page's next reads start it and it fails.
    await server.getByText("Failed", { exact: true }).waitFor({ timeout: 60_000 });
    assert.ok(((await server.locator(".tool-server-error").textContent()) ?? "").length > 10, "the failure is said in words");
    await screenshot(page, "tools-page-failed-server");
    page.once("dialog", (d) => void d.accept());
    await server.getByRole("button", { name: "Remove broken" }).click();
    await server.waitFor({ state: "detached" });
    const cfg = JSON.parse(fs.readFileSync(path.join(dataDir, "mcp.json"), "utf8")) as { mcpServers: Record<string, unknown> };
    assert.deepEqual(Object.keys(cfg.mcpServers), ["files"]);
  });

  test("800×700, dark: the Tools page fits", async () => {
    await page.setViewportSize({ width: 800, height: 700 });
    await page.getByRole("button", { name: "Switch to dark theme" }).click();
    await screenshot(page, "tools-page-800-dark");
    const overflow = await page.evaluate<number>("(() => { const m = document.querySelector('.main'); return m ? m.scrollWidth - m.clientWidth : 0; })()");
    assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px`);
    await page.getByRole("button", { name: "Switch to light theme" }).click();
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  async function answerDone(): Promise<void> {
    await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 600_000 });
  }

  test("chat: the call waits for Allow once, runs, the card shows the folder's files, and the answer continues", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Chat" }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("What is in my folder?");
    const before = chatRequests.length;
    await box.press("Enter");
    const card = page.locator(".msg.assistant .tool-call").last();
    const allow = card.getByRole("button", { name: "Allow once" });
    await allow.waitFor({ timeout: 600_000 });
    assert.match((await card.locator(".tool-call-args").textContent()) ?? "", new RegExp(`"path": "${folder.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")}"`));
    assert.equal(toolCalls.length, 0, "nothing runs before the user answers");
    const first = chatRequests[before];
    assert.ok(
      first.tools?.some((t) => t.function.name === TOOL),
      "the UI offered the enabled tools",
    );
    await screenshot(page, "chat-tool-ask");

    await allow.click();
    await card.getByText("Done", { exact: true }).waitFor({ timeout: 60_000 });
    await card.locator("summary", { hasText: "Result" }).click();
    const result = (await card.locator(".tool-call-result pre").textContent()) ?? "";
    for (const f of ["alpha-notes.txt", "beta-plan.md", "gamma-dir"]) assert.match(result, new RegExp(f.replace(".", "\\.")), `the card shows ${f}`);
    await answerDone();

    // The call went to the core with the user's approval and the turn that made it.
    assert.equal(toolCalls.length, 1);
    assert.equal(toolCalls[0].name, TOOL);
    assert.equal(toolCalls[0].approval, "once");
    assert.equal(typeof toolCalls[0].sessionId, "string");
    assert.equal(typeof toolCalls[0].turnId, "string");
    // The model continued: the next request carries the call and its result as a tool message.
    const next = chatRequests[before + 1];
    assert.ok(next, "a second request after the call");
    const asked = next.messages.find((m) => m.role === "assistant" && m.tool_calls?.length);
    const answered = next.messages.find((m) => m.role === "tool");
    assert.equal(asked?.tool_calls?.[0].function.name, TOOL);
    assert.equal(answered?.tool_call_id, asked?.tool_calls?.[0].id);
    assert.match(String(answered?.content), /alpha-notes\.txt/);
    assert.equal(chatRequests.length, before + 2, "one call, then the answer in words");
    await screenshot(page, "chat-tool-result");

    // Read back from the history (two turns in the core): one question, one answer holding the card.
    const finalText = (await page.locator(".msg.assistant .bubble > .markdown").last().textContent()) ?? "";
    await page.getByRole("button", { name: "New chat" }).click();
    await page.locator(".session-open", { hasText: "What is in my folder?" }).click();
    const reread = page.locator(".msg.assistant .tool-call");
    await reread.first().waitFor();
    assert.equal(await page.locator(".msg.user").count(), 1);
    assert.equal(await page.locator(".msg.assistant").count(), 1);
    assert.equal(await reread.count(), 1);
    await reread.locator("summary", { hasText: "Result" }).click();
    assert.match((await reread.locator(".tool-call-result pre").textContent()) ?? "", /beta-plan\.md/);
    assert.equal((await page.locator(".msg.assistant .bubble > .markdown").last().textContent()) ?? "", finalText);
  });

  test("chat: Deny answers the model with the declined message, and the server never runs the call", async () => {
    await page.getByRole("button", { name: "New chat" }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("List my folder again");
    const before = chatRequests.length;
    const callsBefore = toolCalls.length;
    await box.press("Enter");
    const card = page.locator(".msg.assistant .tool-call").last();
    await card.getByRole("button", { name: "Deny" }).waitFor({ timeout: 600_000 });
    await card.getByRole("button", { name: "Deny" }).click();
    await card.getByText("Declined", { exact: true }).waitFor();
    await answerDone();
    assert.equal(toolCalls.length, callsBefore, "a denied call never reaches /api/tools/call");
    const next = chatRequests[before + 1];
    const answered = next.messages.find((m) => m.role === "tool");
    assert.equal(answered?.content, DECLINED);
    // The core's record of the calls it ran (logs/tools.jsonl) has the allowed one only.
    const ran = fs
      .readFileSync(path.join(dataDir, "logs", "tools.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { callId: string | null });
    assert.equal(ran.length, toolCalls.length);
    assert.ok(!ran.some((l) => l.callId === answered?.tool_call_id), "the denied call is not in the core's call log");
    await page.getByRole("button", { name: "Switch to dark theme" }).click();
    await screenshot(page, "chat-tool-denied-dark");
    await page.setViewportSize({ width: 800, height: 700 });
    await screenshot(page, "chat-tool-denied-800-dark");
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole("button", { name: "Switch to light theme" }).click();
  });

  test("Stop while a call waits for the user ends the answer; the call never runs", async () => {
    await page.getByRole("button", { name: "New chat" }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Look, then stop");
    const callsBefore = toolCalls.length;
    const requestsBefore = chatRequests.length;
    await box.press("Enter");
    const card = page.locator(".msg.assistant .tool-call").last();
    await card.getByRole("button", { name: "Allow once" }).waitFor({ timeout: 600_000 });
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await card.getByText("Stopped", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Send" }).waitFor();
    assert.equal(await card.getByRole("button", { name: "Allow once" }).count(), 0, "no question left once stopped");
    await page.locator(".msg.assistant").last().getByText("Stopped.").waitFor();
    assert.equal(toolCalls.length, callsBefore);
    assert.equal(chatRequests.length, requestsBefore + 1, "the loop asked the model nothing more");
  });

  test("Always allow this tool: the call runs, the next runs without asking; the Tools page shows it and Revoke takes it back", async () => {
    await page.getByRole("button", { name: "New chat" }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("And once more");
    const callsBefore = toolCalls.length;
    await box.press("Enter");
    const card = page.locator(".msg.assistant .tool-call").last();
    await card.getByRole("button", { name: "Always allow this tool" }).waitFor({ timeout: 600_000 });
    await card.getByRole("button", { name: "Always allow this tool" }).click();
    await card.getByText("Done", { exact: true }).waitFor({ timeout: 60_000 });
    await answerDone();
    assert.equal(toolCalls[callsBefore].approval, "always");

    // The next answer's call runs by the standing permission: no question, no approval sent.
    await box.fill("One more time");
    await box.press("Enter");
    await answerDone();
    const standing = page.locator(".msg.assistant").last().locator(".tool-call");
    await standing.getByText("Always allowed", { exact: true }).waitFor();
    assert.equal(await standing.getByRole("button", { name: "Allow once" }).count(), 0);
    assert.equal(toolCalls.length, callsBefore + 2);
    assert.equal(toolCalls[callsBefore + 1].approval, undefined);

    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Tools" }).click();
    const row = page.locator(".tool-row").filter({ has: page.getByText("list_directory", { exact: true }) });
    await row.getByText("Always allowed", { exact: true }).waitFor();
    await screenshot(page, "tools-page-always");
    await row.getByRole("button", { name: 'Revoke "always allow" for list_directory' }).click();
    await row.getByText("Ask every time", { exact: true }).waitFor();
    const reply = (await (await api("/api/tools")).json()) as { servers: { tools: { name: string; permission: string }[] }[] };
    assert.equal(reply.servers[0].tools.find((t) => t.name === "list_directory")?.permission, "ask");
    assert.deepEqual(pageProblems, []);
  });

  for (const [width, height] of [
    [1280, 800],
    [800, 700],
  ] as const) {
    for (const theme of ["light", "dark"] as const) {
      test(`the Tools page and a chat with a tool card at ${width}×${height}, ${theme}: nothing scrolls sideways`, async () => {
        await page.setViewportSize({ width, height });
        const toggle = page.getByRole("button", { name: theme === "dark" ? "Switch to dark theme" : "Switch to light theme" });
        if (await toggle.count()) await toggle.click();
        const sideways = async () =>
          await page.evaluate<number>("(() => { const m = document.querySelector('.main'); return m ? m.scrollWidth - m.clientWidth : 0; })()");
        await page.goto(`${core.url}/#/tools`);
        await page.locator("section.tool-server").first().waitFor();
        assert.ok((await sideways()) <= 1, "the Tools page scrolls sideways");
        await screenshot(page, `tools-page-${width}-${theme}`);
        await page.goto(`${core.url}/#/chat`);
        if (width < 1000) await page.getByRole("button", { name: "Chats", exact: true }).click();
        await page.locator(".session-open", { hasText: "What is in my folder?" }).click();
        await page.locator(".msg.assistant .tool-call").first().waitFor();
        await page.locator(".tool-call-result summary").first().click();
        assert.ok((await sideways()) <= 1, "the chat scrolls sideways");
        await screenshot(page, `chat-tool-card-${width}-${theme}`);
      });
    }
  }
});

// The loop's logic as plain functions (renderer/src/chat/agentLoop.ts with the app's CoreClient),
// in Node against a real core and the real filesystem server: no browser needed. The renderer's
// modules are loaded at run time by path: they compile under the renderer's DOM settings
// (renderer/tsconfig.json), not this project's, so only what this test uses is typed here.
const fromRenderer = <T>(rel: string): Promise<T> => import(pathToFileURL(path.join(repoRoot, "renderer", "src", rel)).href) as Promise<T>;
interface LoopClient {
  raw(p: string, init?: RequestInit): Promise<Response>;
}
interface CallView {
  name: string;
  status: string;
  result: string | null;
}
interface StepView {
  calls: CallView[];
}
interface LoopModule {
  runAgentLoop: (o: {
    client: LoopClient;
    messages: WireMessage[];
    sessionId: string | null;
    tools: NonNullable<ChatBody["tools"]>;
    alwaysAllowed: ReadonlySet<string>;
    maxSteps: number;
    signal: AbortSignal;
    handlers: { onDelta(d: string): void; decide(c: CallView): Promise<"once" | "always" | "deny"> };
  }) => Promise<{ steps: StepView[]; stepLimitReached: boolean; messages: WireMessage[]; sessionId: string | null }>;
}
describe("the agent loop against a real core, in Node", { timeout: 600_000 }, () => {
  let core: RunningCore;
  const dataDir = tempDir("clawrl-tools-loop-");
  const folder = tempDir("clawrl-tools-loop-folder-");
  const token = "tools-loop-token-0123456789";
  const sent: ChatBody[] = [];

  before(async () => {
    fs.writeFileSync(path.join(folder, "only-file.txt"), "x\n");
    fs.writeFileSync(path.join(dataDir, "mcp.json"), JSON.stringify({ mcpServers: { files: { command: process.execPath, args: [fsServer, folder] } } }));
    core = await startCore({ model: await tinyModel({ arch: "qwen2" }), port: 0, dataDir, token });
  });
  after(async () => {
    await core?.close();
  });

  /** The app's client, whose requests to /v1 get what a deciding model would add (as the browser test does). */
  async function forcingClient() {
    const { CoreClient } = await fromRenderer<{ CoreClient: new (c: { apiBase: string; token: string }) => LoopClient }>("api/client.ts");
    const client = new CoreClient({ apiBase: core.url, token });
    const raw = client.raw.bind(client);
    client.raw = (p: string, init: RequestInit = {}) => {
      if (p !== "/v1/chat/completions" || typeof init.body !== "string") return raw(p, init);
      const body = JSON.parse(init.body) as ChatBody;
      sent.push(structuredClone(body));
      const out: ChatBody = { ...body, max_tokens: 24, seed: 3 };
      if (body.tool_choice !== "none" && body.tools?.some((t) => t.function.name === TOOL)) {
        out.tool_choice = { type: "function", function: { name: TOOL } };
        out.tools = body.tools.map((t) =>
          t.function.name === TOOL
            ? {
                ...t,
                function: { ...t.function, parameters: { type: "object", properties: { path: { type: "string", enum: [folder] } }, required: ["path"] } },
              }
            : t,
        );
      }
      return raw(p, { ...init, body: JSON.stringify(out) });
    };
    return client;
  }

  test("calls, results and the step limit: after 2 rounds the model is asked to answer without tools", async () => {
    const { runAgentLoop } = await fromRenderer<LoopModule>("chat/agentLoop.ts");
    const { loadOpenAiTools } = await fromRenderer<{ loadOpenAiTools: (c: LoopClient) => Promise<NonNullable<ChatBody["tools"]>> }>("api/tools.ts");
    const client = await forcingClient();
    const tools = await loadOpenAiTools(client);
    assert.ok(
      tools.some((t) => t.function.name === TOOL),
      "the enabled tools, as OpenAI tools",
    );
    const asked: string[] = [];
    const r = await runAgentLoop({
      client,
      messages: [{ role: "user", content: "What is in the folder?" }],
      sessionId: null,
      tools,
      alwaysAllowed: new Set(),
      maxSteps: 2,
      signal: new AbortController().signal,
      handlers: { onDelta: () => undefined, decide: async (c) => (asked.push(c.name), asked.length === 1 ? "once" : "deny") },
    });
    assert.deepEqual(asked, [TOOL, TOOL]);
    assert.equal(r.steps.length, 2);
    assert.equal(r.steps[0].calls[0].status, "done");
    assert.match(r.steps[0].calls[0].result ?? "", /only-file\.txt/);
    assert.equal(r.steps[1].calls[0].status, "declined");
    assert.equal(r.stepLimitReached, true);
    assert.equal(sent.length, 3);
    assert.equal(sent[2].tool_choice, "none", "the last request lets the model answer in words only");
    const toolMsgs = r.messages.filter((m) => m.role === "tool").map((m) => m.content);
    assert.match(String(toolMsgs[0]), /only-file\.txt/);
    assert.equal(toolMsgs[1], DECLINED);
    assert.ok(r.sessionId, "one session for the whole answer");
    const session = (await (await fetch(`${core.url}/api/sessions/${r.sessionId}`, { headers: { Authorization: `Bearer ${token}` } })).json()) as {
      turns: { turnId: string; messages: WireMessage[] }[];
    };
    assert.equal(session.turns.length, 3, "each request of the loop is a turn of the same session");

    // Read back as the chat does: the later turns continue the first answer, with its calls.
    const { toolStepsOf } = await fromRenderer<{ toolStepsOf: (m: WireMessage[]) => StepView[] | null }>("chat/history.ts");
    const steps = toolStepsOf(session.turns[2].messages);
    assert.equal(steps?.length, 2);
    assert.equal(steps?.[1].calls[0].status, "declined");
    assert.equal(toolStepsOf(session.turns[0].messages), null);
  });

  test("pasted server entries: Claude Desktop's file, one named entry, a bare entry with a typed name; bad ones say why", async () => {
    const { parsePastedServers } = await fromRenderer<{
      parsePastedServers: (text: string, name: string) => { ok: true; servers: { name: string }[] } | { ok: false; error: string };
    }>("pages/tools/serverEntry.ts");
    const whole = parsePastedServers(JSON.stringify({ mcpServers: { a: { command: "npx", args: ["-y", "x"] }, b: { url: "https://e.com/mcp" } } }), "");
    assert.ok(whole.ok && whole.servers.map((s) => s.name).join() === "a,b");
    const line = parsePastedServers('"memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },', "");
    assert.ok(line.ok && line.servers[0].name === "memory");
    const bare = parsePastedServers('{"command": "uvx", "args": ["mcp-server-time"]}', "time");
    assert.ok(bare.ok && bare.servers[0].name === "time");
    const unnamed = parsePastedServers('{"command": "uvx"}', "");
    assert.ok(!unnamed.ok && /no name/.test(unnamed.error));
    const badName = parsePastedServers('{"my server": {"command": "x"}}', "");
    assert.ok(!badName.ok && /cannot be a server's name/.test(badName.error));
    const notJson = parsePastedServers("{nope", "");
    assert.ok(!notJson.ok && /not valid JSON/.test(notJson.error));
  });
});
