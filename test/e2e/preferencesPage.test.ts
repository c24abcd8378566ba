// The Preferences page against a real core (tiny qwen2 model): a hint given in Chat says it
// applies from the next message and shows up as an active preference; the page edits and
// disables it, and the next answer's prompt follows each change. Screenshots in test-artifacts/.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { api } from "../training/helpers.js";

describe("Preferences page", { skip: browserMissing() ?? false, timeout: 300_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;

  before(async () => {
    ensureRendererBuilt();
    core = await startCore({
      model: await tinyModel({ arch: "qwen2" }),
      dataDir: tempDir("clawrl-prefs-ui-"),
      token: "prefs-ui-token-0123",
      engine: { maxContextSize: 1024, sequences: 2, threads: 1, backend: "cpu" },
      training: false,
    });
    await api(core, "PATCH", "/api/settings", { defaultMaxTokens: 8 });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(signInUrl(core.url, core.token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  /** The newest UI turn's recorded preference block (undefined: none). */
  async function lastUiTurnBlock(): Promise<{ block: string } | undefined> {
    const sessions = (await api(core, "GET", "/api/sessions")).json.sessions;
    const detail = (await api(core, "GET", `/api/sessions/${sessions[0].id}`)).json;
    return detail.turns.at(-1).preferences;
  }

  async function send(text: string) {
    const answers = (await page.locator(".msg.assistant .msg-tools").count()) + 1;
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill(text);
    await box.press("Enter");
    await page
      .locator(".msg.assistant .msg-tools")
      .nth(answers - 1)
      .waitFor({ timeout: 60_000 });
    await page.getByRole("button", { name: "Send" }).waitFor();
  }

  test("a hint in Chat applies from the next message; the page lists, edits and disables it", async () => {
    await send("Tell me about otters.");
    assert.equal(await lastUiTurnBlock(), undefined);
    const answer = page.locator(".msg.assistant").last();
    await answer.getByRole("button", { name: "Add hint" }).click();
    await answer.getByText("Applies from your next message.").waitFor();
    await answer.getByRole("textbox", { name: "Hint" }).fill("Always answer in French.");
    await answer.getByRole("button", { name: "Save hint" }).click();
    await answer.getByText(/Applies from your next message as a/).waitFor();
    await screenshot(page, "preferences-chat-hint");

    await send("And beavers?");
    assert.match((await lastUiTurnBlock())?.block ?? "", /Always answer in French\./);
    // The answer says its prompt carried the preference, and links to them.
    await page.locator(".msg.assistant").last().getByRole("link", { name: "1 preference" }).waitFor();
    await screenshot(page, "preferences-chat-applied");

    await page.getByRole("link", { name: "Preferences" }).click();
    await page.getByRole("heading", { name: "Preferences" }).waitFor();
    const item = page.getByRole("listitem", { name: "Preference: Always answer in French." });
    await item.getByText("active · in prompt").waitFor();
    await item.getByText("from your hint").waitFor();
    await item.getByText(/\d+ tokens of context/).waitFor();
    await item.getByText(/From turn/).waitFor();
    await page.getByText(/In the prompt now: 1 of 1 active/).waitFor();
    await screenshot(page, "preferences-list");

    await item.getByRole("button", { name: "Edit" }).click();
    await item.getByRole("textbox", { name: "Preference text" }).fill("Always answer in French, briefly.");
    await item.getByRole("button", { name: "Save" }).click();
    const edited = page.getByRole("listitem", { name: "Preference: Always answer in French, briefly." });
    await edited.waitFor();
    await page.getByText("Saved. It applies from your next message.").waitFor();

    await edited.getByRole("button", { name: "Disable" }).click();
    await edited.getByText("disabled", { exact: true }).waitFor();
    await page.getByText("Disabled. Your next message no longer carries it.").waitFor();
    await edited.getByText(/You changed it from active to disabled/).waitFor();
    await screenshot(page, "preferences-disabled");
    const list = (await api(core, "GET", "/api/preferences")).json.preferences;
    assert.deepEqual(
      list.map((p: { text: string; status: string }) => [p.text, p.status]),
      [["Always answer in French, briefly.", "disabled"]],
    );

    await page.getByRole("link", { name: "Chat" }).click();
    await send("And seals?");
    assert.equal(await lastUiTurnBlock(), undefined);
    assert.equal(await page.locator(".msg.assistant").last().locator(".answer-prefs").count(), 0, "no preference in its prompt, none shown");

    // Undo from the page puts it back.
    await page.getByRole("link", { name: "Preferences" }).click();
    await page.getByRole("listitem", { name: "Preference: Always answer in French, briefly." }).getByRole("button", { name: "Undo" }).click();
    await page.getByText("active · in prompt").waitFor();

    // The settings beside the list: keep the block to this app's chat.
    await page.locator(".pref-settings > summary").click();
    // A controlled box: it changes when the saved settings come back, so click rather than uncheck.
    await page.getByRole("checkbox", { name: /Also for outside clients/ }).click();
    await page.getByText(/· app chat only/).waitFor();
    assert.equal((await api(core, "GET", "/api/settings")).json.preferencesForOutsideClients, false);
    await screenshot(page, "preferences-settings");
  });
});
