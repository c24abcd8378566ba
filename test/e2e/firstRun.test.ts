// The first run, in the browser against a real core started with NO model: the chat shows the
// guide (the recommended catalog model for this machine, with its size, memory and training
// verdict) and the composer waits for a model. "Download and use" first meets an unreachable
// hub (a plain error and Retry), then downloads from a local server with Hugging Face's layout
// (HF_ENDPOINT, as modelsDownload.test.ts does: the tiny stories260K under every catalog file
// name, so whichever entry this machine gets recommended is served), loads it with no reload and
// answers a message. On the Models page an imported GGUF is announced with "Use now".
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { loadCatalog } from "../../models/catalog.js";
import { callApi } from "../helpers/api.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl, layoutShots } from "../helpers/browser.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { startFakeHub } from "../modelsDownload/hfServer.js";

/** A local port nothing listens on (connections to it are refused). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("first run: the chat guides from no model to an answer", { skip: browserMissing() ?? false, timeout: 600_000 }, () => {
  let core: RunningCore;
  let hub: Awaited<ReturnType<typeof startFakeHub>>;
  let browser: Browser;
  let page: Page;
  let dataDir: string;
  const token = "first-run-token-0123456789";
  const savedEndpoint = process.env.HF_ENDPOINT;
  const problems: string[] = [];
  const body = fs.readFileSync(storiesModelPath());
  let recommended: { id: string; name: string } = { id: "", name: "" };

  const setTheme = async (theme: "light" | "dark") => {
    const current = await page.evaluate<string>("document.documentElement.dataset.theme");
    if (current !== theme) await page.getByRole("button", { name: `Switch to ${theme} theme` }).click();
  };
  /** Screenshots at 1280×800 and 800×700, light and dark; the page never scrolls sideways. */
  const shots = (name: string) => layoutShots(page, `first-run-${name}`, setTheme, 800);

  before(async () => {
    ensureRendererBuilt();
    // Every catalog file, as the hub would have it: the recommended one depends on this machine.
    const files = Object.fromEntries(loadCatalog().map((e) => [`${e.repo}/${e.file}`, { body }]));
    // The first two transfers of a file drop after 256 KB (the downloader retries after 1 s, then 2 s):
    // long enough for the guide to show what arrived.
    hub = await startFakeHub({ files, cutAfterBytes: 256 * 1024, cutTimes: 2 });
    // The core's model service reads HF_ENDPOINT when a download starts: first a host that refuses.
    process.env.HF_ENDPOINT = `http://127.0.0.1:${await closedPort()}`;
    dataDir = tempDir("clawrl-e2e-first-run-");
    core = await startCore({ port: 0, dataDir, token, training: false, engine: { threads: 1, sequences: 1, backend: "cpu" } });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    page.on("pageerror", (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    await core?.close();
    await hub?.close();
    if (savedEndpoint === undefined) delete process.env.HF_ENDPOINT;
    else process.env.HF_ENDPOINT = savedEndpoint;
  });

  test("with no model the chat shows the guide with the recommended model, and the composer waits", async () => {
    const models = (await callApi(core, "GET", "/api/models")).body as { active: unknown; catalog: { id: string; name: string; recommended: boolean }[] };
    assert.equal(models.active, null, "the core starts with no model");
    const rec = models.catalog.find((c) => c.recommended);
    assert.ok(rec, "the catalog names a recommended model");
    recommended = rec;

    await page.goto(signInUrl(core.url, token));
    const guide = page.getByRole("region", { name: "Welcome to ClawRL" });
    await guide.waitFor();
    await guide.getByText(recommended.name, { exact: true }).waitFor();
    const facts = (await guide.locator(".first-run-model").textContent()) ?? "";
    assert.match(facts, /download · needs about [\d.]+ [KMG]B of memory to run/);
    assert.match(facts, /Trains here|Too large to train here|Serve only/, "the fit verdict the API gives");
    assert.ok(await guide.getByRole("button", { name: "Download and use" }).isEnabled());
    assert.ok(await guide.getByRole("button", { name: "Import and use" }).isVisible());
    assert.equal(await guide.getByRole("button", { name: /connect/i }).count(), 0, "no server connection is offered (the app has none)");
    // The composer waits for a model and says why.
    const composer = page.getByRole("textbox", { name: "Message" });
    assert.ok(await composer.isDisabled());
    assert.equal(await composer.getAttribute("aria-describedby"), "composer-no-model");
    assert.match((await page.locator("#composer-no-model").textContent()) ?? "", /No model is loaded yet/);
    assert.ok(await page.getByRole("button", { name: "Send" }).isDisabled());
    await shots("guide");
  });

  test("Download and use against an unreachable hub says so plainly, with Retry", async () => {
    const guide = page.getByRole("region", { name: "Welcome to ClawRL" });
    await guide.getByRole("button", { name: "Download and use" }).click();
    const alert = guide.getByRole("alert").filter({ hasText: "Could not reach" });
    await alert.waitFor({ timeout: 30_000 });
    assert.equal(await guide.getByRole("progressbar").count(), 0, "no empty bar for a download that never started");
    assert.match((await alert.textContent()) ?? "", /Could not reach 127\.0\.0\.1:\d+: the connection was refused\. Check the connection/);
    assert.equal(await guide.getByRole("button", { name: "Download and use" }).count(), 0, "Retry replaces the button");
    await shots("offline");
  });

  test("Retry downloads, loads the model with no reload, and a message gets an answer", async () => {
    process.env.HF_ENDPOINT = hub.endpoint;
    const guide = page.getByRole("region", { name: "Welcome to ClawRL" });
    await guide.getByRole("alert").getByRole("button", { name: "Retry" }).click();
    // While it downloads: a labelled bar and a live line with the bytes received of the total.
    const bar = guide.getByRole("progressbar", { name: `Download of ${recommended.name}` });
    await bar.waitFor({ timeout: 30_000 });
    const line = guide.locator(".first-run-progress [role=status]");
    assert.equal(await line.getAttribute("aria-live"), "polite");
    // The download's reply comes before the hub's headers: the total shows with its first progress event.
    await line.filter({ hasText: " of " }).waitFor({ timeout: 30_000 });
    assert.match((await line.textContent()) ?? "", /^[\d.]+ (B|KB|MB) of 1\.1 MB( · [\d.]+ [KM]?B\/s)?( · .+ left)? · downloading$/);
    await screenshot(page, "first-run-downloading-1280-light");
    // The download ends, the model is used ("and use") and the guide gives way to the chat.
    await guide.waitFor({ state: "detached", timeout: 180_000 });
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.waitFor();
    assert.ok(await composer.isEnabled());
    assert.equal(await page.locator("#composer-no-model").count(), 0);
    assert.ok(
      hub.requests.some((r) => r.url.includes("/resolve/")),
      `the hub was asked for the file: ${JSON.stringify(hub.requests)}`,
    );
    const models = (await callApi(core, "GET", "/api/models")).body as { active: { id: string } | null; installed: { id: string }[] };
    assert.equal(models.active?.id, recommended.id, "the downloaded model serves");
    assert.ok(models.installed.some((m) => m.id === recommended.id));

    await composer.fill("Once upon a time");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".msg.assistant .answer-source").first().waitFor({ timeout: 120_000 });
    const answer = ((await page.locator(".msg.assistant .bubble").first().textContent()) ?? "").trim();
    assert.ok(answer.length > 0, "the answer has words");
    assert.doesNotMatch(answer, /No model is loaded/);
    await shots("answered");
  });

  test("Models page: an imported GGUF is announced with Use now, which serves it", async () => {
    const copy = path.join(dataDir, "imported-stories.gguf");
    fs.copyFileSync(storiesModelPath(), copy);
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("textbox", { name: "GGUF file path" }).fill(copy);
    await page.getByRole("button", { name: "Import", exact: true }).click();
    const notice = page.getByRole("status").filter({ hasText: /^Imported / });
    await notice.waitFor();
    const imported = (await callApi(core, "GET", "/api/models")).body as { installed: { id: string; name: string; path: string }[] };
    const entry = imported.installed.find((m) => m.path === copy);
    assert.ok(entry, "the core lists the imported file");
    // The notice names it as the list does (this file's GGUF name is only its architecture: its file name).
    const row = page.locator("tbody tr").filter({ hasText: "imported" });
    const listed = ((await row.locator("strong").first().textContent()) ?? "").trim();
    assert.equal(listed, "imported-stories");
    assert.equal(((await notice.locator("span").first().textContent()) ?? "").trim(), `Imported ${listed}`);
    await screenshot(page, "first-run-import-use-now-1280-light");
    await notice.getByRole("button", { name: "Use now" }).click();
    await row.locator(".tag-active").first().waitFor({ timeout: 120_000 });
    const after = (await callApi(core, "GET", "/api/models")).body as { active: { path: string } | null };
    assert.equal(after.active?.path, copy, "the imported model serves");
    assert.deepEqual(problems, [], "no console errors");
  });
});
