// The chat header against a real core with two installed models: the served model is named
// (size, quantization, backend, "No adapter"), the picker switches it (the core loads the other
// one at once: /v1/models and the next answer say so), the chat's system prompt and max tokens
// reach the recorded turn, a deep link with the token opens its page, and no page scrolls
// sideways at 1280 or 800 px, light or dark.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { callApi } from "../helpers/api.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

const pages = ["chat", "training", "preferences", "checkpoints", "models", "settings"] as const;

describe("chat header, generation settings, deep links, layout", { skip: browserMissing() ?? false, timeout: 600_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  let tiny: string;
  const token = "header-token-0123456789";
  const problems: string[] = [];
  /** the chat given its own settings */
  let ownChat = "";

  before(async () => {
    ensureRendererBuilt();
    tiny = await tinyModel({ arch: "qwen2", seed: 5 });
    core = await startCore({
      port: 0,
      dataDir: tempDir("clawrl-header-"),
      token,
      model: storiesModelPath(),
      training: false,
      engine: { threads: 1, sequences: 1, backend: "cpu" },
    });
    core.models.registry.importFile(storiesModelPath());
    core.models.registry.importFile(tiny);
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    page.on("pageerror", (e) => problems.push(e.message));
    // Learning is off in this core, so /api/training and /api/checkpoints are absent (the pages say so); nothing else may 404 (the favicon included).
    page.on("response", (r) => {
      const p = new URL(r.url()).pathname;
      if (r.status() === 404 && p !== "/api/training" && p !== "/api/checkpoints") problems.push(`404 ${p}`);
    });
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  const answerDone = () => page.getByRole("button", { name: "Send" }).waitFor();

  test("the header names the served model and says No adapter", async () => {
    await page.goto(signInUrl(core.url, token));
    const picker = page.getByRole("combobox", { name: "Model" });
    await picker.waitFor();
    await page.locator(".model-facts").filter({ hasText: "F32" }).waitFor();
    assert.match((await page.locator(".model-facts").textContent()) ?? "", /^\d+(\.\d)? (KB|MB) · F32 · CPU$/);
    assert.match((await picker.locator("option:checked").textContent()) ?? "", /stories260K|stories/i);
    assert.equal((await page.locator(".model-picker .tag").textContent())?.trim(), "No adapter");
    assert.equal(await page.getByRole("link", { name: "Browse catalog" }).getAttribute("href"), "#/models");
    assert.match((await page.locator(".status-line").textContent()) ?? "", /^No adapter · /, "the footer says no adapter, not a model name");
  });

  test("the chat's system prompt and max tokens reach the recorded turn", async () => {
    await page.getByRole("button", { name: "Chat settings" }).click();
    const panel = page.getByRole("region", { name: "Chat settings" });
    await panel.getByRole("textbox", { name: "System prompt" }).fill("You are a terse storyteller.");
    await panel.getByRole("spinbutton", { name: "Max tokens" }).fill("7");
    await screenshot(page, "chat-settings-panel");
    await panel.getByRole("button", { name: "Done" }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Once upon a time");
    await box.press("Enter");
    await page.locator(".msg.assistant .answer-source").first().waitFor();
    await answerDone();
    const sessions = await callApi(core, "GET", "/api/sessions");
    const sid = sessions.body.sessions[0].id as string;
    const detail = await callApi(core, "GET", `/api/sessions/${sid}`);
    const turn = detail.body.turns[0];
    assert.deepEqual(turn.messages[0], { role: "system", content: "You are a terse storyteller." });
    assert.equal(turn.sampling.maxTokens, 7);
    assert.ok(turn.responseTokenCount <= 7, `${turn.responseTokenCount} tokens`);
    assert.equal(((await page.locator(".msg.assistant .answer-source").last().textContent()) ?? "").trim(), "stories260K · No adapter");
    ownChat = sid;
  });

  test("a chat's own settings are kept with it by the core: another browser opens the chat with them", async () => {
    const own = { systemPrompt: "You are a terse storyteller.", temperature: 0.7, topP: 0.95, maxTokens: 7, toolSteps: 8 };
    // Saved once the core has recorded the new chat's first turn.
    for (let i = 0; i < 100 && (await callApi(core, "GET", `/api/sessions/${ownChat}`)).body.session.generation === undefined; i++)
      await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual((await callApi(core, "GET", `/api/sessions/${ownChat}`)).body.session.generation, own);
    const other = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage(); // no storage of its own
    try {
      await other.goto(signInUrl(core.url, token));
      await other
        .getByRole("button", { name: /Once upon a time/ })
        .first()
        .click();
      await other.locator(".msg.assistant").first().waitFor();
      await other.getByRole("button", { name: "Chat settings" }).click();
      const panel = other.getByRole("region", { name: "Chat settings" });
      assert.equal(await panel.getByRole("textbox", { name: "System prompt" }).inputValue(), own.systemPrompt);
      assert.equal(await panel.getByRole("spinbutton", { name: "Max tokens" }).inputValue(), "7");
      await panel.getByText("This chat has its own settings.").waitFor();
      // Back to the defaults: stored as such (null clears it).
      await panel.getByRole("button", { name: "Use the defaults" }).click();
      for (let i = 0; i < 100 && (await callApi(core, "GET", `/api/sessions/${ownChat}`)).body.session.generation !== undefined; i++)
        await new Promise((r) => setTimeout(r, 100));
      assert.equal((await callApi(core, "GET", `/api/sessions/${ownChat}`)).body.session.generation, undefined);
      await panel.getByText("This chat uses the defaults from Settings.").waitFor();
    } finally {
      await other.context().close();
    }
  });

  test("switching the model from the header: /v1/models and the next answer say the new one", async () => {
    const tinyId = `local:${path.basename(tiny, ".gguf")}`;
    const served = path.basename(tiny, ".gguf");
    const picker = page.getByRole("combobox", { name: "Model" });
    await picker.selectOption(tinyId);
    await page
      .getByRole("status")
      .filter({ hasText: /Switching to/ })
      .waitFor();
    await screenshot(page, "chat-header-switching");
    // Done when the picker is usable again and shows the new model.
    await page.locator(".model-select:not([disabled])").waitFor({ timeout: 120_000 });
    assert.equal(await picker.inputValue(), tinyId);
    const models = await callApi(core, "GET", "/v1/models");
    assert.equal(models.body.data[0].id, served);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("And then?");
    await box.press("Enter");
    await page.locator(".msg.assistant").nth(1).locator(".tag").waitFor();
    await answerDone();
    assert.equal(((await page.locator(".msg.assistant .answer-source").last().textContent()) ?? "").trim(), `${served} · No adapter`);
    assert.equal(
      ((await page.locator(".msg.assistant .answer-source").first().textContent()) ?? "").trim(),
      "stories260K · No adapter",
      "the earlier answer keeps its model",
    );
    await screenshot(page, "chat-header-switched");
  });

  test("chat defaults set in Settings are kept by the core and start the next new chat", async () => {
    await page.getByRole("link", { name: "Settings" }).click();
    // Part of the Settings form: the page's one Save keeps them.
    const section = page.getByRole("region", { name: "Chat defaults" });
    await section.getByRole("textbox", { name: "System prompt" }).fill("Answer like a pirate.");
    await section.getByRole("spinbutton", { name: "Max tokens" }).fill("24");
    await page.getByRole("button", { name: "Save settings" }).click();
    await screenshot(page, "settings-chat-defaults");
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    const settings = await callApi(core, "GET", "/api/settings");
    assert.deepEqual(settings.body.chatDefaults, { systemPrompt: "Answer like a pirate.", temperature: 0.7, topP: 0.95, maxTokens: 24, toolSteps: 8 });
    await page.getByRole("link", { name: "Chat" }).click();
    await page.getByRole("button", { name: "New chat" }).click();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Ahoy");
    await box.press("Enter");
    await page.locator(".msg.assistant .answer-source").first().waitFor();
    await answerDone();
    const sessions = (await callApi(core, "GET", "/api/sessions")).body.sessions as { id: string; title: string | null }[];
    const sid = sessions.find((x) => x.title === "Ahoy")!.id;
    const turn = (await callApi(core, "GET", `/api/sessions/${sid}`)).body.turns[0];
    assert.deepEqual(turn.messages[0], { role: "system", content: "Answer like a pirate." });
    assert.equal(turn.sampling.maxTokens, 24);
    // Back to the built-in defaults for the tests after this one.
    await callApi(core, "PATCH", "/api/settings", { chatDefaults: { systemPrompt: "", temperature: 0.7, topP: 0.95, maxTokens: null } });
  });

  test("a deep link with the token opens its page", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    try {
      const p = await ctx.newPage();
      await p.goto(`${core.url}/#/training&token=${encodeURIComponent(token)}`);
      await p.getByRole("heading", { name: "Training", level: 1 }).waitFor();
      assert.equal(await p.getByRole("link", { name: "Training" }).getAttribute("aria-current"), "page");
      assert.equal(new URL(p.url()).hash, "#/training", "the token leaves the address bar, the page stays");
      await p.goto(`${core.url}/#/models?token=${encodeURIComponent(token)}`);
      await p.getByRole("heading", { name: "Models", level: 1 }).waitFor();
    } finally {
      await ctx.close();
    }
  });

  for (const width of [1280, 800]) {
    for (const theme of ["light", "dark"] as const) {
      test(`no page scrolls sideways at ${width} px (${theme})`, async () => {
        await page.setViewportSize({ width, height: 860 });
        const current = await page.evaluate<string>("document.documentElement.dataset.theme");
        if (current !== theme) await page.getByRole("button", { name: `Switch to ${theme} theme` }).click();
        for (const id of pages) {
          await page.goto(`${core.url}/#/${id}`);
          await page.locator(".main h1, .chat-header").first().waitFor();
          await page.waitForTimeout(300); // data from the core
          const [doc, vw] = await page.evaluate<[number, number]>("[document.documentElement.scrollWidth, window.innerWidth]");
          assert.ok(doc <= vw, `${id} at ${width} px: document ${doc} px wide in a ${vw} px window`);
          await screenshot(page, `layout-${id}-${width}-${theme}`);
        }
        if (width === 800) {
          // The chats column is a drawer here, and the nav shows icons with their names for assistive tech.
          await page.goto(`${core.url}/#/chat`);
          const toggle = page.getByRole("button", { name: "Chats", exact: true });
          await toggle.click();
          await page.getByRole("complementary", { name: "Chats" }).getByRole("button", { name: "New chat" }).waitFor();
          await screenshot(page, `layout-chat-drawer-${width}-${theme}`);
          await page.getByRole("button", { name: "Close chats" }).click();
          assert.equal(await toggle.getAttribute("aria-expanded"), "false");
        }
      });
    }
  }

  test("no errors in the console", () => {
    // The browser's own line for each failed load says no more than the status: the 404 lines above name the paths.
    assert.deepEqual(
      problems.filter((p) => !/^Failed to load resource/.test(p)),
      [],
    );
  });
});
