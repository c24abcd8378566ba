// The Checkpoints page's "Import adapter…" against a real core (tiny qwen2 model, learning loop
// and publish gate on): an adapter that fits is imported, gated and served, and its row says
// "imported"; one made for another model is refused with the reason and nothing changes; one
// that moves the model too far is kept as a rejected checkpoint. Screenshots in test-artifacts/.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { writeLoraAdapter as writeRandomAdapter } from "../inference/loraFixture.js";
import { api, chat, FLUENCY_NOT_TESTED } from "../training/helpers.js";

describe("Checkpoints: Import adapter…", { skip: browserMissing() ?? false, timeout: 300_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const work = tempDir("clawrl-import-ui-");
  let small: string;
  let foreign: string;
  let big: string;

  before(async () => {
    ensureRendererBuilt();
    const model = await tinyModel({ arch: "qwen2" });
    core = await startCore({
      model,
      dataDir: tempDir("clawrl-import-ui-data-"),
      token: "import-ui-token-0123",
      engine: { maxContextSize: 512, sequences: 2, threads: 1, backend: "cpu" },
      training: { stepsPerRun: 2, restartBackoffMs: 200, worker: { niceness: 5 }, gate: FLUENCY_NOT_TESTED },
    });
    await api(core, "PATCH", "/api/settings", { batchSize: 2, loraRank: 4, loraAlpha: 8, maxTrainContext: 256 });
    for (const q of ["what is a cat", "tell me a story"]) await chat(core, q);
    small = path.join(work, "fits.gguf");
    writeRandomAdapter(small, model, { rank: 4, alpha: 8, magnitude: 0.05, seed: 3 });
    foreign = path.join(work, "for-llama.gguf");
    writeRandomAdapter(foreign, await tinyModel({ arch: "llama" }), { rank: 4 });
    big = path.join(work, "too-far.gguf");
    writeRandomAdapter(big, model, { rank: 4, alpha: 8, magnitude: 3, seed: 5 });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(signInUrl(core.url, core.token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    await page.getByRole("link", { name: "Checkpoints" }).click();
    await page.getByRole("heading", { name: "Checkpoints" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  async function importPath(p: string) {
    await page.getByRole("button", { name: "Import adapter…" }).click();
    const dialog = page.getByRole("dialog", { name: "Import adapter" });
    await dialog.waitFor();
    await dialog.getByLabel("Adapter path").fill(p);
    await dialog.getByRole("button", { name: "Import", exact: true }).click();
    return dialog;
  }

  test("an adapter that fits: gated, published and served; its row says imported", async () => {
    const dialog = await importPath(small);
    // Either outcome ends the wait, so a rejection fails here with the gate's reason, not a timeout.
    const outcome = dialog.getByText(/Imported as ckpt-1/);
    await outcome.waitFor({ timeout: 120_000 });
    assert.match((await outcome.textContent()) ?? "", /Imported as ckpt-1\. The publish gate passed it and it is served now/);
    await screenshot(page, "import-adapter-published");
    await dialog.getByRole("button", { name: "Close" }).click();
    await dialog.waitFor({ state: "detached" });
    const row = page.locator("tbody tr").first();
    await row.getByText("imported").waitFor();
    assert.match((await row.textContent()) ?? "", /ckpt-1.*active.*imported.*published/);
    await page.getByText("Serving: ckpt-1").waitFor();
    await screenshot(page, "import-adapter-list");
    assert.equal((await chat(core, "and now?")).adapter, "ckpt-1");
  });

  test("an adapter for another model is refused with the reason; nothing changes", async () => {
    const dialog = await importPath(foreign);
    await dialog
      .getByRole("alert")
      .getByText(/Not imported: .*the adapter is for architecture 'llama', the served model is 'qwen2'/)
      .waitFor({ timeout: 60_000 });
    await screenshot(page, "import-adapter-refused");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    assert.equal(await page.locator("tbody tr").filter({ hasNotText: "No adapter" }).count(), 1, "no checkpoint was added");
    assert.equal((await api(core, "GET", "/api/status")).json.training.activeCheckpoint, 1);
  });

  test("an adapter that moves the model too far is kept as rejected; the served one stays", async () => {
    const dialog = await importPath(big);
    await dialog
      .getByText(/Imported as ckpt-2, but the publish gate rejected it: KL to the serving adapter .* is above the bound/)
      .waitFor({ timeout: 120_000 });
    await screenshot(page, "import-adapter-rejected");
    await dialog.getByRole("button", { name: "Close" }).click();
    const top = page.locator("tbody tr").first();
    await top.getByText("ckpt-2").waitFor();
    assert.match((await top.textContent()) ?? "", /ckpt-2.*imported.*rejected/);
    await page.getByText("Serving: ckpt-1").waitFor();
  });
});
