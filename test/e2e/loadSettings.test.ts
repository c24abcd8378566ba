// The Models page's "Load settings" (issue 32) in headless Chromium against a real core on the
// tiny model: the serving model's panel shows the app's own choices ("Auto (…)"), a refused value
// says why, a context length changed and "Reload with these settings" reloads the model (its
// adapter kept), and the panel and GET /api/status show the new context. Screenshots at 1280 and 800.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

describe("Models page: load settings per model", { skip: browserMissing() ?? false, timeout: 600_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const token = "load-settings-token-0123456789";
  const errors: string[] = [];

  before(async () => {
    ensureRendererBuilt();
    const model = await tinyModel({ arch: "qwen2" });
    process.env.CLAWRL_THREADS = "1";
    core = await startCore({ port: 0, dataDir: tempDir("clawrl-e2e-load-"), token, model, training: false, engine: { sequences: 1 } });
    core.models.registry.importFile(model);
    core.models.registry.importFile(await tinyModel({ arch: "qwen2", seed: 12 }));
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("heading", { name: "Load settings" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  test("change the context length, reload: the model serves with it and the status says so", async () => {
    const serving = page.getByTestId("load-serving");
    await serving.waitFor();
    const before = core.engine!.info().contextSize;
    assert.match((await serving.textContent()) ?? "", new RegExp(`context ${before.toLocaleString("en")} tokens`));
    const ctx = page.getByLabel(/How much of the conversation it reads at once/).first();
    assert.equal(await ctx.getAttribute("placeholder"), `Auto (${before.toLocaleString("en")})`, "the app's own choice is shown");
    assert.equal(
      await page
        .getByLabel(/Processor threads it uses/)
        .first()
        .getAttribute("placeholder"),
      "Auto (1)",
    );
    await screenshot(page, "models-load-settings");

    // A value the model was not trained for is refused with the reason, nothing changes.
    await ctx.fill("100000");
    await page.getByRole("button", { name: "Save" }).first().click();
    await page.getByRole("alert").filter({ hasText: "longer than this model was trained for" }).waitFor();
    assert.deepEqual(core.store.settings.modelLoad, {});

    await ctx.fill("2048");
    await page.getByRole("button", { name: "Reload with these settings" }).click();
    await page.getByText(/Reloaded in [\d.]+ s: context 2,048 tokens/).waitFor({ timeout: 120_000 });
    await serving.filter({ hasText: "context 2,048 tokens" }).waitFor();
    assert.equal(core.engine!.info().contextSize, 2048);
    const status = (await (await fetch(`${core.url}/api/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      model: { contextSize: number };
    };
    assert.equal(status.model.contextSize, 2048);
    assert.equal(Object.values(core.store.settings.modelLoad)[0]?.contextSize, 2048, "stored for this model");
    await screenshot(page, "models-load-settings-reloaded");

    await page.setViewportSize({ width: 800, height: 700 });
    const overflow = await page.evaluate<number>("(() => { const m = document.querySelector('.main'); return m ? m.scrollWidth - m.clientWidth : 0; })()");
    assert.ok(overflow <= 1, `no sideways scroll at 800 px (${overflow} px)`);
    await screenshot(page, "models-load-settings-800");
    assert.deepEqual(
      errors.filter((e) => !/status of 400/.test(e)),
      [],
    );
  });
});
