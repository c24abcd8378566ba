// The Models page's Hugging Face search in headless Chromium against a local hub (HF_ENDPOINT,
// as test/e2e/modelsDownload does): search words, open a repository, see each quantization's size
// and verdicts, download one and use it; delete another model through its confirmation (the disk
// it frees, its checkpoints kept); the embedding models in their own section and out of the chat's
// model picker. Screenshots at 1280 and 800, light and dark.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { loadEmbeddingCatalog } from "../../models/catalog.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl, layoutShots } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { startFakeHub } from "../modelsDownload/hfServer.js";

const REPO = "acme/Tiny-Qwen3-GGUF";

describe("Models page: search Hugging Face, download a quantization, use it, delete a model", { skip: browserMissing() ?? false, timeout: 600_000 }, () => {
  let core: RunningCore;
  let hub: Awaited<ReturnType<typeof startFakeHub>>;
  let browser: Browser;
  let page: Page;
  const token = "models-search-token-0123456789";
  const savedEndpoint = process.env.HF_ENDPOINT;
  const api = async (method: string, route: string, body?: unknown) => {
    const r = await fetch(`${core.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return (await r.json()) as Record<string, unknown>;
  };

  const setTheme = async (theme: "light" | "dark") => {
    const current = await page.evaluate<string>("document.documentElement.dataset.theme");
    if (current === theme) return;
    // Behind a modal dialog the toggle cannot be clicked: the theme is the root's data-theme.
    if (await page.locator("dialog[open]").count()) await page.evaluate(`document.documentElement.dataset.theme = "${theme}"`);
    else await page.getByRole("button", { name: `Switch to ${theme} theme` }).click();
  };
  /** Screenshots at 1280×800 and 800×700, light and dark; the page never scrolls sideways. */
  const shots = (name: string) => layoutShots(page, `models-search-${name}`, setTheme, 900);

  before(async () => {
    ensureRendererBuilt();
    const q8 = fs.readFileSync(await tinyModel({ arch: "qwen3", type: "q8_0" }));
    const f32 = fs.readFileSync(await tinyModel({ arch: "qwen3" }));
    hub = await startFakeHub({
      files: { [`${REPO}/Tiny-Qwen3-Q8_0.gguf`]: { body: q8 }, [`${REPO}/Tiny-Qwen3-F32.gguf`]: { body: f32 } },
      repos: {
        [REPO]: {
          downloads: 4321,
          extraTree: [
            { path: "Tiny-Qwen3-F16-00001-of-00002.gguf", size: 4000 },
            { path: "Tiny-Qwen3-F16-00002-of-00002.gguf", size: 3000 },
          ],
        },
        "acme/Tiny-Llama-GGUF": { downloads: 12 },
      },
    });
    process.env.HF_ENDPOINT = hub.endpoint;
    core = await startCore({ port: 0, dataDir: tempDir("clawrl-e2e-search-"), token });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("heading", { name: "Search Hugging Face" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
    await hub?.close();
    if (savedEndpoint === undefined) delete process.env.HF_ENDPOINT;
    else process.env.HF_ENDPOINT = savedEndpoint;
  });

  test("search, pick a quantization, download it, Use now; a split model is refused with its reason", async () => {
    await page.getByRole("searchbox", { name: "Search Hugging Face for GGUF models" }).or(page.getByLabel("Search Hugging Face for GGUF models")).fill("tiny");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const found = page.getByRole("list", { name: "Repositories found" });
    await found.getByRole("button", { name: new RegExp(REPO) }).waitFor();
    assert.equal(await found.getByRole("listitem").count(), 2);
    await found.getByRole("button", { name: new RegExp(REPO) }).click();
    await page.getByRole("heading", { name: new RegExp(REPO) }).waitFor();
    const row = (q: string) => page.locator("tbody tr").filter({ has: page.locator("strong", { hasText: new RegExp(`^${q}$`) }) });
    await row("Q8_0").waitFor();
    assert.match((await row("Q8_0").textContent()) ?? "", /Serves here \(about .+\)/);
    assert.match((await row("Q8_0").textContent()) ?? "", /Trains here · wasm/);
    assert.match((await row("F16").textContent()) ?? "", /Split into 2 files/);
    assert.equal(await row("F16").getByRole("button").count(), 0, "a split model offers no download");
    await shots("files");

    await row("Q8_0").getByRole("button", { name: "Download" }).click();
    await row("Q8_0").getByRole("button", { name: "Use now" }).waitFor({ timeout: 120_000 });
    await row("Q8_0").getByRole("button", { name: "Use now" }).click();
    await row("Q8_0").locator(".tag-active").waitFor({ timeout: 120_000 });
    const status = (await api("GET", "/api/status")) as { model: { path: string; name: string } };
    assert.match(status.model.path, /Tiny-Qwen3-Q8_0\.gguf$/);
    // One name for the file: the page's active card, the status and the picker agree.
    const models = (await api("GET", "/api/models")) as { installed: { id: string; name: string }[] };
    const name = models.installed.find((m) => m.id === `hf:${REPO}/Tiny-Qwen3-Q8_0.gguf`)!.name;
    assert.equal(status.model.name, name);
    await page.getByRole("heading", { name: "Active model" }).waitFor();
    assert.match((await page.locator(".cards").first().textContent()) ?? "", new RegExp(name));
  });

  test("delete a model: the confirmation says the disk freed and that its checkpoints stay; the serving model cannot be deleted", async () => {
    const row = (q: string) => page.locator("tbody tr").filter({ has: page.locator("strong", { hasText: new RegExp(`^${q}$`) }) });
    await row("F32").getByRole("button", { name: "Download" }).click();
    await row("F32").getByRole("button", { name: "Use now" }).waitFor({ timeout: 120_000 });
    const installed = page.locator("table").first().locator("tbody tr");
    await installed.nth(1).waitFor();
    const models = (await api("GET", "/api/models")) as { installed: { id: string; name: string; quantization: string }[] };
    // Two quantizations of one model share its name: its buttons name the quantization too.
    const label = (m: { name: string; quantization: string }) => ({ name: `${m.name} (${m.quantization})` });
    const f32 = label(models.installed.find((m) => m.id.endsWith("F32.gguf"))!);
    const q8 = label(models.installed.find((m) => m.id.endsWith("Q8_0.gguf"))!);
    const f32Id = models.installed.find((m) => m.id.endsWith("F32.gguf"))!.id;
    assert.equal(await page.getByRole("button", { name: `Delete ${q8.name}` }).isDisabled(), true, "the serving model's Delete is off");
    await page.getByRole("button", { name: `Delete ${f32.name}` }).click();
    const dialog = page.getByRole("dialog", { name: `Delete ${f32.name}?` });
    await dialog.waitFor();
    const text = (await dialog.textContent()) ?? "";
    assert.match(text, /freeing that much disk space/);
    // Nothing was learned on it here: the dialog says so (a model with checkpoints says they are kept, in its line).
    assert.match(text, /It has no checkpoints: nothing has been learned on it yet/);
    await shots("delete");
    await dialog.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("button", { name: `Delete ${f32.name}` }).waitFor({ state: "detached" });
    const after = (await api("GET", "/api/models")) as { installed: { id: string }[] };
    assert.equal(
      after.installed.some((m) => m.id === f32Id),
      false,
    );
    await row("F32").getByRole("button", { name: "Download" }).waitFor();
  });

  test("embedding models have their own section and stay out of the chat's model picker", async () => {
    // An installed embedding model: a file under the catalog embedding model's name, imported.
    const list = (await api("GET", "/api/models")) as { embeddingCatalog: { id: string; name: string; file?: string }[] };
    assert.ok(list.embeddingCatalog.length > 0);
    const embed = loadEmbeddingCatalog()[0];
    const file = path.join(tempDir("clawrl-e2e-embed-"), path.basename(embed.file));
    fs.copyFileSync(await tinyModel({ arch: "llama" }), file);
    const imported = (await api("POST", "/api/models/import", { path: file })) as { model: { id: string } };
    const section = page.locator("section", { has: page.getByRole("heading", { name: "Embedding models" }) });
    await section.getByRole("button", { name: `Delete ${embed.name}` }).waitFor();
    const installedTable = page.locator("table").first();
    assert.equal(await installedTable.getByText(embed.name).count(), 0, "not among the chat models");
    await screenshot(page, "models-search-embeddings-1280");
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Chat" }).click();
    const select = page.getByRole("combobox").first();
    await select.waitFor();
    const options = await page.locator("select option").allTextContents();
    assert.ok(options.length > 0);
    assert.ok(!options.some((o) => o.includes(embed.name)), `picker: ${options.join(", ")}`);
    assert.ok(imported.model.id);
  });
});
