// How the chat renders an answer: markdown, highlighted code with a copy button, no markup from
// the model ever reaching the DOM, readable core errors. A tiny random model cannot be made to
// write markdown, so here only the answer's bytes are scripted (Playwright answers
// /v1/chat/completions in the browser); the page, the rest of the API and the core are real.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import type { Browser, BrowserContext, Page, Route } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";

const answer = [
  "## Plan\n\nHere is **bold** text and a list:\n\n- one\n- two\n\n",
  '```ts\nconst x: number = 42; // the answer\nfunction f() { return "hi"; }\n```\n\n',
  'Raw markup stays text: <script>window.__pwned = 1</script> <img src="x" onerror="window.__pwned = 2">\n\n',
  "| a | b |\n|---|---|\n| 1 | 2 |\n",
];

/** What the next scripted answer says (tests change it). */
let scripted = answer;

function sseBody(chunks: string[]): string {
  const lines = chunks.map(
    (c, i) =>
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "tiny-test", choices: [{ index: 0, delta: i === 0 ? { role: "assistant", content: c } : { content: c }, finish_reason: null }] })}\n\n`,
  );
  return (
    lines.join("") +
    `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "tiny-test", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`
  );
}

describe("chat rendering in headless Chromium", { skip: browserMissing() ?? false, timeout: 300_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const token = "render-token-0123456789";
  const requests: { headers: Record<string, string>; body: { messages: { role: string; content: string }[]; stream: boolean } }[] = [];

  /** Answers the UI's chat request with the scripted answer, as it streams. */
  const scriptedAnswer = async (r: Route) => {
    requests.push({ headers: r.request().headers(), body: r.request().postDataJSON() });
    await r.fulfill({
      status: 200,
      headers: {
        "content-type": "text/event-stream",
        "x-clawrl-session-id": "s-render",
        "x-clawrl-turn-id": `t-render-${requests.length}`,
        "x-clawrl-adapter": "3",
        "access-control-expose-headers": "*",
      },
      body: sseBody(scripted),
    });
  };

  before(async () => {
    ensureRendererBuilt();
    core = await startCore({ port: 0, dataDir: tempDir("clawrl-render-"), token });
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: core.url });
    page = await context.newPage();
    // The rest of what the page shows agrees with the scripted answers: the model that writes
    // them, the adapter, and the chat they are in.
    await page.route("**/api/status", (r) =>
      r.fulfill({
        json: {
          model: { id: "tiny-test", name: "tiny-test", path: "/models/tiny-test.gguf", contextSize: 4096, sizeBytes: 5_242_880, quantization: "Q8_0" },
          backend: "cpu",
          gpu: null,
          adapter: "3",
          training: { state: "idle", activeCheckpoint: 3 },
        },
      }),
    );
    await page.route("**/api/sessions", (r) =>
      r.fulfill({
        json: {
          sessions: requests.length
            ? [{ id: "s-render", title: "Show me some code", lastActivityAt: new Date().toISOString(), turnCount: requests.length, source: "ui" }]
            : [],
        },
      }),
    );
    await page.route("**/api/sessions/s-render", (r) =>
      r.request().method() === "PATCH" ? r.fulfill({ json: { session: { id: "s-render", title: "Show me some code" } } }) : r.continue(),
    );
    await page.route("**/v1/models", (r) => r.fulfill({ json: { object: "list", data: [{ id: "tiny-test", object: "model" }] } }));
    await page.route("**/v1/chat/completions", scriptedAnswer);
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  test("markdown, highlighted code, copy button; model markup stays text", async () => {
    await page.goto(signInUrl(core.url, token));
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Show me some code");
    await box.press("Enter");
    await page.getByRole("heading", { name: "Plan" }).waitFor();
    const md = page.locator(".msg.assistant .markdown").last();
    assert.equal(await md.locator("strong").textContent(), "bold");
    assert.equal(await md.locator("li").count(), 2);
    assert.equal(await md.locator("table td").count(), 2);
    assert.ok((await md.locator("pre code .hljs-keyword").count()) >= 2, "code is highlighted");
    assert.equal(await md.locator("script, img").count(), 0, "no markup from the answer reaches the DOM");
    assert.match((await md.textContent()) ?? "", /<script>window.__pwned = 1<\/script>/);
    assert.equal(await page.evaluate("window.__pwned ?? null"), null);

    await md.getByRole("button", { name: "Copy code" }).click();
    assert.equal(await page.evaluate("navigator.clipboard.readText()"), 'const x: number = 42; // the answer\nfunction f() { return "hi"; }');

    // Our request: the UI's main turn, streamed, with the served model's id.
    assert.equal(requests[0].headers["x-clawrl-client"], "ui");
    assert.equal(requests[0].body.stream, true);
    assert.deepEqual(requests[0].body.messages, [{ role: "user", content: "Show me some code" }]);
    assert.match(
      (await page.locator(".msg.assistant .answer-source").last().textContent()) ?? "",
      /^tiny-test · Adapter 3$/,
      "the model (the chunks' model) and the adapter that wrote it",
    );
    await screenshot(page, "chat-markdown");
  });

  test("Regenerate resends the conversation in the same session; Shift+Enter makes a new line", async () => {
    await page.getByRole("button", { name: "Regenerate" }).click();
    // (Locator waits only: the page's CSP forbids the eval that string predicates need.)
    await page.getByRole("button", { name: "Send" }).waitFor();
    await page.locator(".msg.assistant h2").waitFor();
    assert.equal(await page.locator(".msg.assistant").count(), 1);
    assert.equal(requests.length, 2);
    assert.equal(requests[1].headers["x-session-id"], "s-render");
    assert.deepEqual(requests[1].body.messages, [{ role: "user", content: "Show me some code" }]);

    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("line one");
    await box.press("Shift+Enter");
    await box.pressSequentially("line two");
    assert.equal(await box.inputValue(), "line one\nline two");
    assert.equal(requests.length, 2, "Shift+Enter does not send");
    await box.press("Enter");
    await page.locator(".msg.assistant").nth(1).locator("h2").waitFor();
    assert.deepEqual(
      requests[2].body.messages.map((m) => m.role),
      ["user", "assistant", "user"],
    );
    assert.equal(requests[2].body.messages[2].content, "line one\nline two");
  });

  test("an error from the core is shown as a readable message", async () => {
    // The scripted turn ids are unknown to the real core: its 404 reads as a sentence, without the internal id.
    await page.getByRole("button", { name: "Thumbs up" }).last().click();
    const alert = page.getByRole("alert").filter({ hasText: /no longer in the history/ });
    await alert.waitFor();
    assert.doesNotMatch((await alert.textContent()) ?? "", /t-render|unknown turn/);
    await screenshot(page, "chat-error");
  });

  test("Esc stops an answer that is streaming; the request is closed and the partial answer stays", async () => {
    // An answer that never ends, from a real HTTP server, so the bytes really stream.
    let closed = false;
    const endless = http.createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "x-clawrl-session-id": "s-render", "x-clawrl-turn-id": "t-endless", "x-clawrl-adapter": "3" });
      const timer = setInterval(() => res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "word " } }] })}\n\n`), 50);
      res.on("close", () => {
        clearInterval(timer);
        closed = true;
      });
    });
    await new Promise<void>((r) => endless.listen(0, "127.0.0.1", r));
    const port = (endless.address() as { port: number }).port;
    await page.unroute("**/v1/chat/completions");
    await page.route("**/v1/chat/completions", (r) => r.continue({ url: `http://127.0.0.1:${port}/v1/chat/completions` }));
    try {
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("Talk forever");
      await box.press("Enter");
      await page
        .locator(".msg.assistant")
        .last()
        .getByText(/word word word/)
        .waitFor();
      await page.keyboard.press("Escape");
      await page.getByRole("button", { name: "Send" }).waitFor();
      const last = page.locator(".msg.assistant").last();
      await last.getByText("Stopped.").waitFor();
      assert.match((await last.textContent()) ?? "", /word word word/);
      assert.equal(await last.getByRole("button", { name: "Thumbs up" }).count(), 0, "a stopped answer is never trained on, so it cannot be rated");
      while (!closed) await new Promise((r) => setTimeout(r, 50));
    } finally {
      endless.close();
    }
  });

  test("dark theme renders the same answer", async () => {
    await page.getByRole("button", { name: "Switch to dark theme" }).click();
    await screenshot(page, "chat-markdown-dark");
    await page.getByRole("button", { name: "Switch to light theme" }).click();
  });

  test("a thinking model's thought is collapsed, math is typeset, long words wrap, an empty answer says so (issue 32)", async () => {
    const fits = (sel: string) =>
      page
        .locator(sel)
        .last()
        .evaluate((el) => el.scrollWidth <= el.clientWidth + 1);
    // The Esc test above pointed the route elsewhere: script the answers again.
    await page.unroute("**/v1/chat/completions");
    await page.route("**/v1/chat/completions", scriptedAnswer);
    scripted = [
      "<think>The user wants the area.\nUse pi r squared.</think>\n\nThe area is $\\pi r^2$, and\n\n",
      "$$\n\\int_0^1 x\\,dx = \\tfrac12\n$$\n\n",
      `See ${"x".repeat(400)}`,
    ];
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Area of a circle?");
    await box.press("Enter");
    const md = page.locator(".msg.assistant .markdown").last();
    await md.locator(".katex-display").waitFor();
    const thought = md.locator("details.thinking");
    assert.equal(await thought.count(), 1);
    assert.equal(await thought.getAttribute("open"), null, "collapsed");
    assert.equal(await thought.locator("summary").textContent(), "Thought process");
    assert.ok(!((await md.textContent()) ?? "").includes("<think>"), "no tag shown");
    assert.ok((await md.locator(".katex").count()) >= 2, "inline and display math typeset");
    assert.ok(await fits(".msg.assistant .bubble"), "the long word wraps in the answer");
    await thought.locator("summary").click();
    assert.match((await thought.textContent()) ?? "", /Use pi r squared/);
    await screenshot(page, "chat-thinking-math");

    scripted = [""];
    await box.fill(`A long word: ${"y".repeat(300)}`);
    await box.press("Enter");
    await page.getByText("The model ended its answer without writing anything.").waitFor();
    assert.ok(await fits(".msg.user .bubble"), "the long word wraps in the question");
    await screenshot(page, "chat-empty-answer");
    scripted = answer;
  });

  test("a thought seen streaming says 'Thinking…', then how long it took; a thought with no answer says the answer is empty (issue 32)", async () => {
    // A real HTTP server streams the answer with pauses, so the thought is open for a while.
    const stream = (steps: [number, string][]) =>
      http.createServer((req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream", "x-clawrl-session-id": "s-render", "x-clawrl-turn-id": "t-think", "x-clawrl-adapter": "3" });
        const chunk = (delta: object, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "tiny-test", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        void (async () => {
          for (const [ms, text] of steps) {
            await new Promise((r) => setTimeout(r, ms));
            res.write(chunk({ content: text }));
          }
          res.end(chunk({}, "stop") + "data: [DONE]\n\n");
        })();
      });
    const serve = async (steps: [number, string][], run: () => Promise<void>) => {
      const server = stream(steps);
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const port = (server.address() as { port: number }).port;
      await page.unroute("**/v1/chat/completions");
      await page.route("**/v1/chat/completions", (r) => r.continue({ url: `http://127.0.0.1:${port}/v1/chat/completions` }));
      try {
        await run();
      } finally {
        server.close();
        await page.unroute("**/v1/chat/completions");
        await page.route("**/v1/chat/completions", scriptedAnswer);
      }
    };
    const box = page.getByRole("textbox", { name: "Message" });
    await serve(
      [
        [0, "<think>Let me think"],
        [700, " about it"],
        [700, " some more."],
        [700, "</think>\n\nThe answer is 42."],
      ],
      async () => {
        await box.fill("Think first");
        await box.press("Enter");
        const summary = page.locator(".msg.assistant").last().locator("details.thinking summary");
        await summary.filter({ hasText: "Thinking…" }).waitFor();
        await page.getByRole("button", { name: "Send" }).waitFor();
        await page.locator(".msg.assistant").last().getByText("The answer is 42.").waitFor();
        const words = (await summary.textContent()) ?? "";
        const m = /^Thought for (\d+) s$/.exec(words);
        assert.ok(m, `the summary after streaming: ${words}`);
        assert.ok(Number(m[1]) >= 1 && Number(m[1]) <= 10, `thought for ${m[1]} s (the thought was open ~2 s)`);
      },
    );
    await serve([[0, "<think>Nothing to add.</think>\n"]], async () => {
      await box.fill("Say nothing");
      await box.press("Enter");
      await page.getByRole("button", { name: "Send" }).waitFor();
      await page.locator(".msg.assistant").last().getByText("The model gave an empty answer: it thought, then wrote nothing.").waitFor();
    });
    // A thought the answer ended inside (the token limit) is no longer "Thinking…".
    await serve([[0, "<think>Still thinking when the tokens ran out"]], async () => {
      await box.fill("Think forever");
      await box.press("Enter");
      await page.getByRole("button", { name: "Send" }).waitFor();
      await page.locator(".msg.assistant").last().locator("details.thinking summary").filter({ hasText: "Thought process (cut off)" }).waitFor();
    });
    await screenshot(page, "chat-thought-timed");
  });
});
