// The Models page against a REAL download: the core's downloader fetches a catalog model from
// a local server with Hugging Face's layout (HF_ENDPOINT, as test/modelsDownload does), which
// sends part of a generated GGUF and then holds the connection open, so the download stays in
// progress for as long as the test needs (no timing). Progress, Pause, Resume and Cancel are
// driven in the browser; the core's own state is checked after each.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { loadCatalog } from "../../models/catalog.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { startFakeHub } from "../modelsDownload/hfServer.js";

const SENT = 64 * 1024; // bytes the server sends before it holds the connection

describe("Models page: a real download's progress, pause, resume and cancel", { skip: browserMissing() ?? false, timeout: 600_000 }, () => {
  let core: RunningCore;
  let hub: Awaited<ReturnType<typeof startFakeHub>>;
  let browser: Browser;
  let page: Page;
  let size = 0;
  const entry = loadCatalog()[0];
  const token = "models-dl-token-0123456789";
  const savedEndpoint = process.env.HF_ENDPOINT;

  const state = async () => {
    const r = await fetch(`${core.url}/api/models`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await r.json()) as { catalog: { id: string; download: { state: string; bytes: number; total: number | null } | null }[] };
    return body.catalog.find((c) => c.id === entry.id)!.download;
  };

  before(async () => {
    ensureRendererBuilt();
    const body = fs.readFileSync(await tinyModel({ arch: "llama" }));
    size = body.length;
    assert.ok(size > SENT * 2, "the generated model is larger than what the server sends");
    hub = await startFakeHub({ files: { [`${entry.repo}/${entry.file}`]: { body } }, stallAfterBytes: SENT });
    // The core's model service reads HF_ENDPOINT when a download starts.
    process.env.HF_ENDPOINT = hub.endpoint;
    core = await startCore({ port: 0, dataDir: tempDir("clawrl-e2e-models-"), token });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("heading", { name: "Catalog" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
    await hub?.close();
    if (savedEndpoint === undefined) delete process.env.HF_ENDPOINT;
    else process.env.HF_ENDPOINT = savedEndpoint;
  });

  test("Download shows the bytes received of the total; Pause, Resume and Cancel reach the core", async () => {
    const row = page.locator("tbody tr").filter({ has: page.locator("strong", { hasText: entry.name }) });
    await row.getByRole("button", { name: "Download" }).click();
    const bar = row.getByRole("progressbar", { name: `Download of ${entry.name}` });
    // The first chunk arrived: the bar and the text show it against the server's size.
    await row.locator(`progress[value="${SENT}"][max="${size}"]`).waitFor({ timeout: 120_000 });
    assert.equal(await bar.getAttribute("value"), String(SENT));
    const text = (await row.locator(".download-cell .small").textContent()) ?? "";
    assert.match(text, /^64\.0 KB of [\d.]+ [KM]B( · [\d.]+ [KM]?B\/s)?( · .+ left)? · downloading$/);
    const s = await state();
    assert.deepEqual([s?.state, s?.bytes, s?.total], ["downloading", SENT, size]);
    await screenshot(page, "models-download");

    await row.getByRole("button", { name: "Pause" }).click();
    await row.getByRole("button", { name: "Resume" }).waitFor();
    assert.equal((await state())?.state, "paused");
    assert.match((await row.locator(".download-cell .small").textContent()) ?? "", /^64\.0 KB of [\d.]+ [KM]B · paused$/, "no speed or time left while paused");
    const partials = () => fs.readdirSync(path.join(core.paths.models), { recursive: true }).map(String);
    await screenshot(page, "models-download-paused");

    // Resume continues from the bytes on disk (a Range request), and the server sends more.
    await row.getByRole("button", { name: "Resume" }).click();
    await row.locator(`progress[value="${2 * SENT}"]`).waitFor({ timeout: 120_000 });
    assert.equal((await state())?.state, "downloading");
    assert.ok(
      hub.requests.some((r) => r.range === `bytes=${SENT}-`),
      `a resumed request from byte ${SENT}: ${JSON.stringify(hub.requests)}`,
    );

    await row.getByRole("button", { name: "Cancel" }).click();
    await row.getByRole("button", { name: "Download" }).waitFor();
    assert.equal(await state(), null, "the core forgot the download");
    assert.equal(await row.getByRole("progressbar").count(), 0);
    assert.ok(!partials().some((f) => f.includes(entry.file)), `partial file left: ${partials().join(", ")}`);
  });
});
