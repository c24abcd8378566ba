// The UI end to end: headless Chromium against the real headless core (real HTTP server,
// real store, a real tiny GGUF), driving the page by accessible role and name as a user would.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { api as coreApi, chat, checkpoints, feedback, waitFor, type CkptView } from "../training/helpers.js";

const missing = browserMissing();

// Generous limits: on a loaded 2-core machine a tiny model's answer can take many minutes.
describe("UI in headless Chromium", { skip: missing ?? false, timeout: 3_600_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let model: string;
  const dataDir = tempDir("clawrl-e2e-");
  const token = "e2e-token-0123456789abcdef";
  const pageProblems: string[] = [];

  const api = async (path: string, init: RequestInit = {}) =>
    fetch(core.url + path, { ...init, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...(init.headers ?? {}) } });

  before(async () => {
    ensureRendererBuilt();
    model = await tinyModel({ arch: "qwen2" });
    core = await startCore({ model, port: 0, dataDir, token });
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    // A tiny random model samples at temperature 1 and may ramble to the end of its context
    // (minutes on a loaded machine). Cap the length of its answers: the request still goes to
    // the real core and streams real tokens; only max_tokens and a seed are added to what the UI
    // sent. The seed makes the draws repeatable: unseeded, the first token is now and then the
    // end of turn, an empty answer.
    await page.route("**/v1/chat/completions", (r) =>
      r.continue({ postData: JSON.stringify({ ...(r.request().postDataJSON() as object), max_tokens: 40, seed: 7 }) }),
    );
    page.on("pageerror", (e) => pageProblems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) pageProblems.push(`CSP: ${m.text()}`);
    });
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  /** Waits for the answer to finish (Send is back); on a timeout, says how far it got and saves a screenshot. */
  async function answerDone(): Promise<void> {
    try {
      await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 900_000 });
    } catch (e) {
      const shown =
        (await page
          .locator(".msg.assistant .bubble")
          .last()
          .textContent()
          .catch(() => "")) ?? "";
      await screenshot(page, "chat-timeout").catch(() => undefined);
      throw new Error(`the answer did not finish (${shown.length} characters shown so far): ${(e as Error).message.split("\n")[0]}`, { cause: e });
    }
  }

  /** Fails when a route the test drives is gone from the core (a 404 "Unknown route"), saying which. */
  async function needRoute(method: string, path: string, body?: unknown): Promise<void> {
    const r = await api(path, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    if (r.status !== 404) return;
    const text = await r.text();
    // A 404 about an unknown item means the route exists.
    assert.doesNotMatch(text, /Unknown route/, `${method} ${path} is not served by the core`);
  }

  test("signs in from the #token URL, then forgets the token in the address bar", async () => {
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    assert.ok(!page.url().includes(token), `token still in the address bar: ${page.url()}`);
    assert.equal(await page.evaluate('sessionStorage.getItem("clawrl.token")'), token);
    await page.getByRole("button", { name: "New chat" }).waitFor();
    // A reload keeps the session (sessionStorage), with no token in the URL.
    await page.reload();
    await page.getByRole("button", { name: "New chat" }).waitFor();
    await screenshot(page, "chat-empty");
  });

  test("a wrong token asks to sign in again with a readable message; the right one gets in", async () => {
    const p2 = await context.browser()!.newPage();
    await p2.goto(signInUrl(core.url, "wrong-token-000000000"));
    await p2
      .getByRole("alert")
      .filter({ hasText: /refused the sign-in token/ })
      .waitFor();
    await p2.getByRole("textbox", { name: "Token" }).fill(token);
    await p2.getByRole("button", { name: "Sign in" }).click();
    await p2.getByRole("button", { name: "New chat" }).waitFor();
    await p2.close();
  });

  let sessionId = "";

  test("sends a message and the answer streams in", async (t) => {
    await needRoute("POST", "/v1/chat/completions", {});
    await page.goto(`${core.url}/#/chat`);
    // What the page showed while the answer came: the Stop button (an answer in progress) and
    // each change of the answer's length. (Page scripts as strings: this file compiles without
    // the DOM's types.) How many renders a stream takes depends on the machine's speed (the
    // page renders at most ~30 times a second), so that count is a diagnostic, not an assertion;
    // the stream itself is checked on the wire below.
    await page.evaluate(`
      window.__lengths = [];
      window.__sawStop = false;
      new MutationObserver(() => {
        if ([...document.querySelectorAll("button")].some((b) => b.textContent.trim() === "Stop")) window.__sawStop = true;
        const b = document.querySelector(".msg.assistant:last-child .bubble");
        const n = b?.textContent?.length ?? 0;
        if (n && n !== window.__lengths.at(-1)) window.__lengths.push(n);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    `);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Hello there");
    const streamed = page.waitForResponse((r) => r.url().endsWith("/v1/chat/completions"));
    await box.press("Enter");
    const res = await streamed;
    await answerDone();
    assert.equal(await page.evaluate("window.__sawStop"), true, "no Stop button while the answer was coming");
    // The real core streamed it: server-sent events, a role chunk, content deltas, a finish chunk, [DONE].
    assert.match(res.headers()["content-type"] ?? "", /text\/event-stream/);
    const events = (await res.text()).split("\n").filter((l) => l.startsWith("data: "));
    assert.equal(events.at(-1), "data: [DONE]");
    const chunks = events
      .slice(0, -1)
      .map((l) => JSON.parse(l.slice(6)) as { choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[] });
    assert.equal(chunks[0].choices[0].delta.role, "assistant");
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    assert.ok(text.length > 0 && chunks.some((c) => c.choices[0]?.finish_reason), `stream: ${events.join(" | ").slice(0, 400)}`);
    const lengths = await page.evaluate<number[]>("window.__lengths");
    t.diagnostic(`${chunks.length} chunks on the wire, ${lengths.length} render(s) of the answer`);
    assert.ok(lengths.length >= 1, "the answer was never shown");
    assert.equal(await page.locator(".msg.user .bubble").first().textContent(), "Hello there");
    const tag = (await page.locator(".msg.assistant .answer-source").last().textContent()) ?? "";
    assert.match(tag, /No adapter|Adapter /);
    // How fast it was written, from the stream's last chunk (llama-server's timings).
    const finish = chunks.find((c) => c.choices[0]?.finish_reason) as {
      timings?: { predicted_n: number; predicted_per_second: number | null; prompt_ms: number };
    };
    const speed = (await page.locator(".msg.assistant .answer-speed").last().textContent()) ?? "";
    const n = finish.timings!.predicted_n + 1;
    assert.equal(
      speed,
      [
        finish.timings!.predicted_per_second !== null ? `${finish.timings!.predicted_per_second.toFixed(1)} tok/s` : null,
        `${n} token${n === 1 ? "" : "s"}`,
        `${(finish.timings!.prompt_ms / 1000).toFixed(2)} s to first token`,
      ]
        .filter(Boolean)
        .join(" · "),
    );
    const sessions = (await (await api("/api/sessions")).json()) as { sessions: { id: string }[] };
    assert.equal(sessions.sessions.length, 1);
    sessionId = sessions.sessions[0].id;
    await screenshot(page, "chat-answer");
  });

  test("thumbs down and a hint reach GET /api/sessions/:id", async (t) => {
    if (!sessionId) return t.skip("needs the streamed answer of the previous test");
    await page.getByRole("button", { name: "Thumbs down" }).click();
    await page.locator('button[aria-label="Thumbs down"][aria-pressed="true"]').waitFor();
    await page.getByRole("button", { name: "Add hint" }).click();
    await page.getByRole("textbox", { name: "Hint" }).fill("Greet the user back by name.");
    await page.getByRole("button", { name: "Save hint" }).click();
    await page.getByText("Greet the user back by name.").waitFor();
    const body = (await (await api(`/api/sessions/${sessionId}`)).json()) as { turns: { feedback: { thumbs: string | null; hint: string | null } | null }[] };
    const fb = body.turns.at(-1)?.feedback;
    assert.equal(fb?.thumbs, "down");
    assert.equal(fb?.hint, "Greet the user back by name.");
    await screenshot(page, "chat-feedback");

    // Changing and withdrawing: thumbs up replaces down; a second click withdraws it.
    await page.getByRole("button", { name: "Thumbs up" }).click();
    await page.locator('button[aria-label="Thumbs up"][aria-pressed="true"]').waitFor();
    await page.getByRole("button", { name: "Thumbs up" }).click();
    await page.locator('button[aria-label="Thumbs up"][aria-pressed="false"]').waitFor();
    const after = (await (await api(`/api/sessions/${sessionId}`)).json()) as { turns: { feedback: { thumbs: string | null } | null }[] };
    assert.equal(after.turns.at(-1)?.feedback?.thumbs ?? null, null);
  });

  test("the chat list renames and reopens a session with its feedback", async (t) => {
    if (!sessionId) return t.skip("needs the session of the earlier tests");
    await page.getByRole("button", { name: "New chat" }).click();
    await page.getByRole("heading", { name: "What can I help with?" }).waitFor();
    const item = page.locator(".session").first();
    await item.hover();
    await item.getByRole("button", { name: /^Rename/ }).click();
    await page.getByRole("textbox", { name: "Chat title" }).fill("Greetings test");
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator(".session-open").filter({ hasText: "Greetings test" }).click();
    await page.getByText("Greet the user back by name.").waitFor();
    // The answer's speed was recorded with the turn: the reopened chat shows it too.
    assert.match((await page.locator(".msg.assistant .answer-speed").last().textContent()) ?? "", /\d+ tokens? · \d+\.\d\d s to first token$/);
    const s = (await (await api(`/api/sessions/${sessionId}`)).json()) as { session: { title: string } };
    assert.equal(s.session.title, "Greetings test");
  });

  test("shows Reconnecting… when the core stops and recovers when it is back", async () => {
    await page.goto(`${core.url}/#/settings`);
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    const port = new URL(core.url).port;
    await core.close();
    const banner = page.getByRole("alert").filter({ hasText: "Reconnecting…" });
    await banner.waitFor({ timeout: 30_000 });
    await screenshot(page, "reconnecting");
    core = await startCore({ model, port: Number(port), dataDir, token });
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    // The page works again: settings load from the restarted core.
    await page.getByRole("combobox", { name: "Learning method" }).waitFor();
  });

  test("settings save through PATCH /api/settings; the OpenClaw snippet is filled in", async () => {
    await page.goto(`${core.url}/#/settings`);
    const batch = page.getByRole("spinbutton", { name: /Answers per lesson.*batch size/ });
    await batch.fill("8");
    const teacher = page.getByRole("combobox", { name: /hint teacher \(OPD\)/ });
    assert.equal(await teacher.inputValue(), "policy");
    await teacher.selectOption("base");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved.").waitFor();
    const s = (await (await api("/api/settings")).json()) as { batchSize: number; teacherSource: string };
    assert.equal(s.batchSize, 8);
    assert.equal(s.teacherSource, "base");
    await page.getByRole("button", { name: "Show token" }).click();
    const snippet = JSON.parse((await page.getByLabel("OpenClaw snippet", { exact: true }).textContent()) ?? "") as {
      models: { providers: { clawrl: { baseUrl: string; apiKey: string; api: string } } };
    };
    assert.equal(snippet.models.providers.clawrl.baseUrl, `${core.url}/v1`);
    assert.equal(snippet.models.providers.clawrl.apiKey, token);
    assert.equal(snippet.models.providers.clawrl.api, "openai-completions");
    await page.getByRole("button", { name: "Hide token" }).click();
    await screenshot(page, "settings");
  });

  test("training page: Train now starts a run and the page shows its progress", async (t) => {
    await page.goto(`${core.url}/#/training`);
    await page.getByRole("heading", { name: "Training" }).waitFor();
    await screenshot(page, "training");
    await needRoute("GET", "/api/training");
    // Every state the "Now" card shows, in order (CDP evaluate: allowed under the page's CSP).
    await page.evaluate(`
      window.__states = [];
      new MutationObserver(() => {
        const v = document.querySelector('[aria-label="Learner"] .card-value')?.textContent;
        if (v && v !== window.__states.at(-1)) window.__states.push(v);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    `);
    await page.evaluate("window.__states = []");
    const answered = page.waitForResponse((r) => r.url().endsWith("/api/training/run"));
    await page.getByRole("button", { name: "Train now" }).click();
    const res = await answered;
    if (res.status() === 409) {
      // Nothing ready to train: the page must say why, in the core's words.
      const reason = ((await res.json()) as { error: { message: string } }).error.message;
      await page.getByRole("alert").filter({ hasText: reason }).waitFor();
      t.diagnostic(`the core had nothing to train: ${reason}`);
      return;
    }
    assert.equal(res.status(), 202, await res.text());
    // Progress: the card shows the run (training step i of n, checking, swapping in) or, if
    // the run was over between two renders, its candidate is in the history.
    const deadline = Date.now() + 900_000; // a bound on waiting, not a timing assertion
    for (;;) {
      const states = await page.evaluate<string[]>("window.__states");
      if (states.some((s) => /^(Training|Checking the new adapter|Swapping the new adapter in)/.test(s))) break;
      const detail = (await (await api("/api/training")).json()) as { history: unknown[] };
      if (detail.history.length > 0) break;
      assert.ok(Date.now() < deadline, `no training progress shown; states seen: ${states.join(" → ")}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(await page.locator(".note-error").count(), 0, (await page.locator(".note-error").allTextContents()).join("; "));
    await screenshot(page, "training-run");
  });

  test("checkpoints page renders (the rollback is tested against the learning loop below)", async () => {
    await page.goto(`${core.url}/#/checkpoints`);
    await page.getByRole("heading", { name: "Checkpoints" }).waitFor();
    // The core may or may not have a checkpoint from the Train now run above: either the list or its empty state.
    await page.locator("tbody tr, p.muted").first().waitFor();
    await screenshot(page, "checkpoints");
  });

  test("models page and dark theme render", async () => {
    await page.goto(`${core.url}/#/models`);
    await page.getByRole("heading", { name: "Models", exact: true }).waitFor();
    await screenshot(page, "models");
    await page.getByRole("button", { name: "Switch to dark theme" }).click();
    assert.equal(await page.evaluate("document.documentElement.dataset.theme"), "dark");
    await page.goto(`${core.url}/#/chat`);
    await page.getByRole("button", { name: "New chat" }).waitFor();
    if (sessionId) await page.locator(".session-open").first().click();
    await screenshot(page, "chat-dark");
    await page.getByRole("button", { name: "Switch to light theme" }).click();
  });

  test("no script errors and no Content-Security-Policy violations on any page", () => {
    assert.deepEqual(pageProblems, []);
  });
});

/**
 * Rollback in the browser against the real learning loop: the core trains two checkpoints from
 * feedback (real trainer process, gate, hot swap), then the user rolls back to the older one
 * on the Checkpoints page and the chat's next answer carries its version. A core of its own,
 * set up through the API before the tests, so no other test's settings (batch size, auto-learn)
 * can change what it trains.
 */
describe("UI rollback against the real learning loop", { skip: missing ?? false, timeout: 3_600_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const token = "e2e-rollback-token-0123456789";
  const pageProblems: string[] = [];
  let published: CkptView[] = [];

  before(async () => {
    ensureRendererBuilt();
    // The learning-loop tests' setup (test/training/helpers.ts startLearningCore), with the UI served.
    core = await startCore({
      model: await tinyModel({ arch: "qwen2" }),
      port: 0,
      dataDir: tempDir("clawrl-e2e-rollback-"),
      token,
      engine: { maxContextSize: 512, sequences: 2, threads: 1, backend: "cpu" },
      // A generous gate (step, drift, fluency): this test is about the UI, gate.test.ts about the bounds.
      training: { stepsPerRun: 2, restartBackoffMs: 200, worker: { niceness: 5 }, gate: { klBound: 10, driftBudget: 10, fluencyMargin: 10 } },
    });
    // No held-back slice, as in the learning-loop tests: every rated answer trains.
    const s = await coreApi(core, "PATCH", "/api/settings", {
      batchSize: 2,
      loraRank: 4,
      loraAlpha: 8,
      learningRate: 1e-3,
      maxTrainContext: 256,
      autoLearn: true,
      heldBackShare: 0,
    });
    assert.equal(s.status, 200, JSON.stringify(s.json));
    // Two published checkpoints: a batch of two rated answers each (auto-learn trains a full
    // batch). The gate may reject a candidate (liked answers less likely): then another batch.
    const prompts = [
      ["what is a cat", "tell me a story"],
      ["what is a dog", "sing a song"],
      ["what is a bird", "count to three"],
      ["what is a fish", "say something nice"],
    ];
    for (const [i, [p1, p2]] of prompts.entries()) {
      const a = await chat(core, p1);
      const b = await chat(core, p2);
      await feedback(core, a.turnId, "up", "mention that cats purr");
      await feedback(core, b.turnId, "down");
      const n = i + 1;
      const c = await waitFor(
        `checkpoint ${n}`,
        async () => (await checkpoints(core)).find((x) => x.n === n),
        900_000, // a bound on waiting on a loaded machine, not a timing assertion
      ).catch(async (e: Error) => {
        const detail = await coreApi(core, "GET", "/api/training");
        throw new Error(`${e.message}; trainer status: ${JSON.stringify(detail.json.training)}`);
      });
      published = (await checkpoints(core)).filter((x) => x.verdict === "published");
      if (c.verdict !== "published") console.warn(`checkpoint ${n} rejected by the gate: ${c.gate.reasons.join("; ")}`);
      if (published.length >= 2) break;
    }
    assert.ok(published.length >= 2, `the learning loop published ${published.length} checkpoint(s) from four batches`);
    // The newest published one is served once its swap is done.
    const newest = published[0];
    await waitFor(
      `${newest.version} served`,
      async () => ((await coreApi(core, "GET", "/api/status")).json.adapter === newest.version ? true : undefined),
      120_000,
    );

    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.route("**/v1/chat/completions", (r) => r.continue({ postData: JSON.stringify({ ...(r.request().postDataJSON() as object), max_tokens: 24 }) }));
    page.on("pageerror", (e) => pageProblems.push(`page error: ${e.message}`));
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  test("Roll back to the older checkpoint: confirmation, a visible swap, and the next answer shows its version", async () => {
    const [newest, older] = published;
    await page.getByRole("link", { name: "Checkpoints" }).click();
    const rows = page.locator("tbody tr");
    const olderRow = rows.filter({ has: page.locator("strong", { hasText: new RegExp(`^${older.version}$`) }) });
    const newestRow = rows.filter({ has: page.locator("strong", { hasText: new RegExp(`^${newest.version}$`) }) });
    await newestRow.getByText("active").waitFor();
    assert.ok(await newestRow.getByRole("button", { name: "Roll back" }).isDisabled(), "the served checkpoint cannot be rolled back to");
    await screenshot(page, "checkpoints-real");

    // Hold the activation in the browser until the swap-in-progress notice has been seen
    // (the real swap of a tiny adapter can be over before a screenshot), then let it through.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route(/\/api\/checkpoints\/\d+\/activate$/, async (r) => {
      await held;
      await r.continue();
    });
    await olderRow.getByRole("button", { name: "Roll back" }).click();
    const dialog = page.getByRole("dialog", { name: `Roll back to ${older.version}?` });
    await dialog.waitFor();
    await dialog.getByRole("button", { name: "Confirm roll back" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Swapping to ${older.version}` })
      .waitFor();
    await screenshot(page, "checkpoints-real-swapping");
    release();
    await page
      .getByRole("status")
      .filter({ hasText: `Now serving ${older.version}` })
      .waitFor({ timeout: 120_000 });
    await page.unroute(/\/api\/checkpoints\/\d+\/activate$/);
    // The list follows (it refreshes on the swap event): the older one is active, the newest can be rolled forward to.
    await olderRow.getByText("active").waitFor();
    await newestRow.getByText("active").waitFor({ state: "detached" });
    await olderRow.getByRole("button", { name: "Roll back", disabled: true }).waitFor();
    await newestRow.getByRole("button", { name: "Roll forward", disabled: false }).waitFor();
    await screenshot(page, "checkpoints-real-rolled-back");

    // The core agrees: served adapter and the active checkpoint.
    const status = (await coreApi(core, "GET", "/api/status")).json;
    assert.equal(status.adapter, older.version);
    assert.equal(status.training.activeCheckpoint, older.n);
    const list = await checkpoints(core);
    assert.deepEqual(
      list.filter((c) => c.active).map((c) => c.n),
      [older.n],
    );

    // The chat's next answer is written by the rolled-back adapter and says so.
    await page.getByRole("link", { name: "Chat" }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("And now?");
    await box.press("Enter");
    await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 900_000 });
    assert.ok(
      ((await page.locator(".msg.assistant .answer-source").last().textContent()) ?? "").trim().endsWith(` · Adapter ${older.version}`),
      "the model, then the adapter that wrote it",
    );
    const sessions = (await coreApi(core, "GET", "/api/sessions")).json.sessions as { id: string; source?: string }[];
    const turns = (
      await Promise.all(
        sessions.map(async (x) => (await coreApi(core, "GET", `/api/sessions/${x.id}`)).json.turns as { adapter: string; messages: { content: unknown }[] }[]),
      )
    ).flat();
    const ours = turns.filter((t) => JSON.stringify(t.messages).includes("And now?"));
    assert.deepEqual(
      ours.map((t) => t.adapter),
      [older.version],
      "the core recorded the answer as written by the rolled-back adapter",
    );
    await screenshot(page, "chat-after-rollback");
  });

  test("Roll back to No adapter: the base model answers, then a checkpoint can be served again", async () => {
    const [, older] = published;
    await page.getByRole("link", { name: "Checkpoints" }).click();
    const baseRow = page.locator("tbody tr").filter({ has: page.locator("strong", { hasText: /^No adapter$/ }) });
    await baseRow.getByRole("button", { name: "Roll back", disabled: false }).click();
    const dialog = page.getByRole("dialog", { name: "Roll back to the model with no adapter?" });
    await dialog.getByRole("button", { name: "Confirm roll back" }).click();
    await page.getByRole("status").filter({ hasText: "Now serving the model with no adapter" }).waitFor({ timeout: 120_000 });
    await baseRow.getByText("active").waitFor();
    await baseRow.getByRole("button", { name: "Roll back", disabled: true }).waitFor();
    assert.equal(await page.locator("tbody .tag-active").count(), 1, "one active row");
    await screenshot(page, "checkpoints-real-no-adapter");
    const status = (await coreApi(core, "GET", "/api/status")).json;
    assert.equal(status.adapter, "base");
    assert.equal(status.training.activeCheckpoint, null);
    // Back to the older checkpoint for the tests below (they start from it).
    assert.equal((await coreApi(core, "POST", `/api/checkpoints/${older.n}/activate`)).status, 200);
  });

  test("Training page: the judged turns and queues come from GET /api/training", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Training" }).click();
    // The page before may have had a table too: wait for this one's heading first.
    await page.getByRole("heading", { name: "Training", level: 1 }).waitFor();
    const rows = page.locator("table tbody tr");
    await rows.first().waitFor();
    const detail = (await coreApi(core, "GET", "/api/training")).json as {
      recentJudged: { messages: { content: string }[]; feedback: { thumbs: string | null; hint: string | null } | null }[];
      training: { judgeQueue: number };
    };
    assert.ok(detail.recentJudged.length >= 4, "the rated turns of the setup are listed");
    assert.equal(await rows.count(), detail.recentJudged.length);
    // Each row shows that turn's question, its thumbs and the hint, newest first.
    for (const [i, t] of detail.recentJudged.entries()) {
      const cells = (await rows.nth(i).locator("td").allTextContents()).map((c) => c.trim());
      assert.equal(cells[1], t.messages.at(-1)?.content);
      assert.match(cells[3], new RegExp(`thumbs ${t.feedback?.thumbs}`));
      assert.equal(cells[5], t.feedback?.hint ?? "—");
    }
    const learner = page.getByRole("group", { name: "Learner" });
    assert.match((await learner.textContent()) ?? "", new RegExp(`Answers waiting for the judge${detail.training.judgeQueue}`));
  });

  /**
   * Presses Tab (or Shift+Tab) until `target` has the focus, at most `max` times; fails naming
   * what had the focus instead. Reaching a control this way is what "keyboard-operable" means.
   */
  async function tabTo(target: Locator, what: string, key: "Tab" | "Shift+Tab" = "Tab", max = 60): Promise<void> {
    const focused = page.locator(":focus");
    for (let i = 0; i <= max; i++) {
      if ((await target.and(focused).count()) > 0) return;
      await page.keyboard.press(key);
    }
    const at = await page.evaluate<string>("document.activeElement ? document.activeElement.outerHTML.slice(0, 160) : 'nothing'");
    throw new Error(`${what} not reached with ${key} in ${max} presses; the focus is on ${at}`);
  }

  /** The focused control draws a visible focus ring (keyboard focus, :focus-visible). */
  async function assertFocusRing(what: string): Promise<void> {
    // Page scripts as strings (this file compiles without the DOM's types): an expression, not a function.
    const style = await page.evaluate<string>(
      "(() => { const s = getComputedStyle(document.activeElement); return s.outlineStyle + ' ' + s.outlineWidth; })()",
    );
    assert.match(style, /^(solid|dotted|dashed|double|auto) [1-9]/, `${what} has no visible focus outline (${style})`);
  }

  async function focusedName(): Promise<string> {
    return await page.evaluate<string>(
      "(() => { const el = document.activeElement; return el ? (el.getAttribute('aria-label') || el.textContent || el.tagName).trim() : ''; })()",
    );
  }

  test("keyboard only: nav, Checkpoints' Roll back with its dialog, Chat's thumbs and hint, Train now, Settings' save, Models' import", async () => {
    const [newest, older] = published;
    const nav = page.getByRole("navigation", { name: "Pages" });
    await page.goto(`${core.url}/#/chat`);
    await page.getByRole("textbox", { name: "Message" }).waitFor();

    // Checkpoints: reach it from the nav with Shift+Tab (the composer has the focus), Enter opens it.
    await tabTo(nav.getByRole("link", { name: "Checkpoints" }), "the Checkpoints link", "Shift+Tab");
    await assertFocusRing("the Checkpoints link");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Checkpoints" }).waitFor();
    const newestRow = page.locator("tbody tr").filter({ has: page.locator("strong", { hasText: new RegExp(`^${newest.version}$`) }) });
    // Newer than the one served: the button says Roll forward (issue 32).
    const rollBack = newestRow.getByRole("button", { name: "Roll forward" });
    await rollBack.and(page.locator(":enabled")).waitFor();
    await tabTo(rollBack, `Roll forward on ${newest.version}`);
    await assertFocusRing("Roll forward");
    await page.keyboard.press("Enter");
    // The newest is newer than the one served: the dialog says so.
    const dialog = page.getByRole("dialog", { name: `Roll forward to ${newest.version}?` });
    await dialog.waitFor();
    // The focus moves into the dialog and stays there however often Tab or Shift+Tab is pressed.
    assert.equal(await focusedName(), "Confirm roll forward");
    for (const key of ["Tab", "Tab", "Tab", "Shift+Tab", "Shift+Tab", "Shift+Tab"]) {
      await page.keyboard.press(key);
      assert.equal(await dialog.locator(":focus").count(), 1, `${key} took the focus out of the dialog (to ${await focusedName()})`);
    }
    await screenshot(page, "checkpoints-real-confirm");
    // Esc cancels: the dialog goes, nothing is activated, the focus is back on Roll back.
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    await rollBack.and(page.locator(":focus")).waitFor();
    assert.equal((await coreApi(core, "GET", "/api/status")).json.adapter, older.version, "Esc rolled nothing back");
    // Space opens it again; Enter on Confirm rolls forward, and the outcome gets the focus.
    await page.keyboard.press("Space");
    await dialog.waitFor();
    await tabTo(dialog.getByRole("button", { name: "Confirm roll forward" }), "Confirm roll forward");
    await page.keyboard.press("Enter");
    const done = page.getByRole("status").filter({ hasText: `Now serving ${newest.version}` });
    await done.waitFor({ timeout: 120_000 });
    await done.and(page.locator(":focus")).waitFor();
    assert.equal((await coreApi(core, "GET", "/api/status")).json.adapter, newest.version);

    // Chat: Thumbs up with Space keeps the focus on it; Add hint with Enter, typed, Enter saves,
    // and the focus comes back to the hint button.
    await tabTo(nav.getByRole("link", { name: "Chat" }), "the Chat link", "Shift+Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.locator(".session-open").first().waitFor();
    if ((await page.locator(".msg.assistant").count()) === 0) {
      // Open the rollback test's chat (the newest) from the list.
      await tabTo(page.locator(".session-open").first(), "the newest chat in the list", "Shift+Tab");
      await page.keyboard.press("Enter");
    }
    const last = page.locator(".msg.assistant").last();
    await last.getByRole("button", { name: "Thumbs up" }).waitFor();
    await page.getByRole("textbox", { name: "Message" }).focus();
    await tabTo(last.getByRole("button", { name: "Thumbs up" }), "Thumbs up", "Shift+Tab");
    await assertFocusRing("Thumbs up");
    await page.keyboard.press("Space");
    await last.locator('button[aria-label="Thumbs up"][aria-pressed="true"]').waitFor();
    assert.equal(await focusedName(), "Thumbs up", "the focus stays on the button after the feedback is saved");
    await tabTo(last.getByRole("button", { name: "Add hint" }), "Add hint");
    await page.keyboard.press("Enter");
    const hintBox = page.getByRole("textbox", { name: "Hint" });
    await hintBox.and(page.locator(":focus")).waitFor();
    await page.keyboard.type("Answer in one short sentence.");
    await page.keyboard.press("Enter");
    await page.getByText("Answer in one short sentence.").waitFor();
    await last.getByRole("button", { name: "Edit hint" }).and(page.locator(":focus")).waitFor();
    const sessions = (await coreApi(core, "GET", "/api/sessions")).json.sessions as { id: string }[];
    const turns = (
      await Promise.all(
        sessions.map(
          async (x) =>
            (await coreApi(core, "GET", `/api/sessions/${x.id}`)).json.turns as { feedback: { thumbs: string | null; hint: string | null } | null }[],
        ),
      )
    ).flat();
    assert.ok(
      turns.some((t) => t.feedback?.thumbs === "up" && t.feedback.hint === "Answer in one short sentence."),
      "the thumbs and hint given with the keyboard reached the core",
    );
    // Esc closes the hint box without saving, the focus back on its button.
    await page.keyboard.press("Enter");
    await hintBox.and(page.locator(":focus")).waitFor();
    await page.keyboard.press("Escape");
    await hintBox.waitFor({ state: "detached" });
    await last.getByRole("button", { name: "Edit hint" }).and(page.locator(":focus")).waitFor();

    // The chat list: rename the open chat with the keyboard; the focus lands on the renamed chat.
    const item = page.locator(".session").first();
    await tabTo(item.getByRole("button", { name: /^Rename / }), "the chat's Rename button", "Shift+Tab");
    await assertFocusRing("Rename");
    await page.keyboard.press("Enter");
    await page.getByRole("textbox", { name: "Chat title" }).and(page.locator(":focus")).waitFor();
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.type("Keyboard chat");
    await page.keyboard.press("Enter");
    await page.locator(".session-open", { hasText: "Keyboard chat" }).and(page.locator(":focus")).waitFor();
    const titles = ((await coreApi(core, "GET", "/api/sessions")).json.sessions as { title: string }[]).map((x) => x.title);
    assert.ok(titles.includes("Keyboard chat"), `titles: ${titles.join(", ")}`);

    // Training: Train now with Enter; the core answers (a run starts on the rated answer, or a
    // reason is shown) and the focus stays on the button.
    await tabTo(nav.getByRole("link", { name: "Training" }), "the Training link", "Shift+Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Training" }).waitFor();
    const trainNow = page.getByRole("button", { name: "Train now" });
    await tabTo(trainNow, "Train now");
    await assertFocusRing("Train now");
    const answered = page.waitForResponse((r) => r.url().endsWith("/api/training/run"));
    await page.keyboard.press("Enter");
    const res = await answered;
    assert.ok([202, 409].includes(res.status()), `Train now answered ${res.status()}`);
    if (res.status() === 409) await page.getByRole("alert").first().waitFor();
    await page.getByRole("button", { name: "Train now" }).and(page.locator(":focus")).waitFor();
    // Pause and Resume: one button that changes its name and keeps the focus. While a request
    // of this page is in flight its buttons are aria-disabled (a key press then does nothing),
    // so each press waits for the button to be enabled again, as a user would.
    await tabTo(page.getByRole("button", { name: "Pause" }), "Pause");
    await page.getByRole("button", { name: "Pause", disabled: false }).and(page.locator(":focus")).waitFor();
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Resume", disabled: false }).and(page.locator(":focus")).waitFor();
    assert.equal((await coreApi(core, "GET", "/api/status")).json.training.paused, true);
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Pause", disabled: false }).and(page.locator(":focus")).waitFor();
    assert.equal((await coreApi(core, "GET", "/api/status")).json.training.paused, false);

    // Settings: a field and Save settings, both by keyboard; the focus stays on Save.
    await tabTo(nav.getByRole("link", { name: "Settings" }), "the Settings link", "Shift+Tab");
    await page.keyboard.press("Enter");
    const batch = page.getByRole("spinbutton", { name: /Answers per lesson.*batch size/ });
    await batch.waitFor();
    await tabTo(batch, "Answers per lesson");
    await page.keyboard.press("ArrowUp"); // 2 → 3
    await tabTo(page.getByRole("button", { name: "Save settings" }), "Save settings");
    await assertFocusRing("Save settings");
    await page.keyboard.press("Enter");
    await page.getByText("Saved.").waitFor();
    assert.equal((await coreApi(core, "GET", "/api/settings")).json.batchSize, 3);
    assert.equal(await focusedName(), "Save settings");

    // Models: the import form; Enter submits, and the core's refusal is shown readably.
    await tabTo(nav.getByRole("link", { name: "Models" }), "the Models link", "Shift+Tab");
    await page.keyboard.press("Enter");
    const file = page.getByRole("textbox", { name: "GGUF file path" });
    await file.waitFor();
    await tabTo(file, "the GGUF file path field");
    await page.keyboard.type("/nonexistent/model.gguf");
    await page.keyboard.press("Enter");
    const refusal = page.getByRole("alert").filter({ hasText: /nonexistent/ });
    await refusal.waitFor();
    assert.ok(((await refusal.boundingBox())?.y ?? 0) > ((await file.boundingBox())?.y ?? Infinity), "the import's problem is shown under its form");
    await screenshot(page, "models-keyboard-import-error");

    // The theme toggle too.
    await tabTo(page.getByRole("button", { name: "Switch to dark theme" }), "the theme toggle");
    await page.keyboard.press("Enter");
    assert.equal(await page.evaluate("document.documentElement.dataset.theme"), "dark");
    await page.keyboard.press("Enter");
    assert.equal(await page.evaluate("document.documentElement.dataset.theme"), "light");
  });

  test("every page in the light and the dark theme, with real data, saved for a person to look at", async () => {
    const pages: [id: string, heading: string, ready: () => Promise<unknown>][] = [
      [
        "chat",
        "",
        async () => {
          await page.locator(".session-open").first().click();
          await page.locator(".msg.assistant .answer-source").first().waitFor();
        },
      ],
      ["training", "Training", () => page.locator("table tbody tr").first().waitFor()],
      ["checkpoints", "Checkpoints", () => page.locator("tbody tr").first().waitFor()],
      ["models", "Models", () => page.locator(".cards").first().waitFor()],
      ["settings", "Settings", () => page.getByRole("combobox", { name: "Learning method" }).waitFor()],
    ];
    for (const theme of ["light", "dark"] as const) {
      await page.goto(`${core.url}/#/chat`);
      await page.getByRole("button", { name: "New chat" }).waitFor();
      if ((await page.evaluate("document.documentElement.dataset.theme")) !== theme) {
        await page.getByRole("button", { name: `Switch to ${theme} theme` }).click();
      }
      assert.equal(await page.evaluate("document.documentElement.dataset.theme"), theme);
      for (const [id, heading, ready] of pages) {
        await page
          .getByRole("navigation", { name: "Pages" })
          .getByRole("link", { name: id[0].toUpperCase() + id.slice(1) })
          .click();
        if (heading) await page.getByRole("heading", { name: heading, exact: true }).waitFor();
        await ready();
        // Nothing wider than the window: a horizontal scrollbar means something overflows.
        const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth");
        assert.ok(overflow <= 0, `the ${id} page overflows the window by ${overflow}px in the ${theme} theme`);
        await screenshot(page, `page-${id}-${theme}`);
      }
    }
    await page.getByRole("button", { name: "Switch to light theme" }).click();
  });

  test("no script errors on the way", () => {
    assert.deepEqual(pageProblems, []);
  });
});
