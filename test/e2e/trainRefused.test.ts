// A served model this machine cannot train, end to end: a real core serving a tiny model, the
// real trainer process kept to 100 MiB of RAM (CLAWRL_TRAINER_RAM_LIMIT, which the trainer
// inherits from the core's environment, as it would from a user's), and headless Chromium.
// The trainer's memory plan refuses the model before loading it; chat must go on answering,
// the Training page must say learning is off with needed vs available memory, and the Models
// page must show the same verdict for the served model and "too large" for the catalog.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { api, waitFor } from "../training/helpers.js";

const LIMIT = "100M";

describe("a served model too large to train here", { skip: browserMissing() ?? false, timeout: 1_800_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const token = "e2e-refused-token-0123456789";
  const saved = process.env.CLAWRL_TRAINER_RAM_LIMIT;
  const pageProblems: string[] = [];

  /** Sends a message in the chat; returns the answer's text once the whole stream has come and the page shows it. */
  async function ask(text: string): Promise<string> {
    const before = await page.locator(".msg.assistant").count();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill(text);
    const answered = page.waitForResponse((r) => r.url().endsWith("/v1/chat/completions"));
    await box.press("Enter");
    const res = await answered;
    assert.equal(res.status(), 200);
    const body = await res.text(); // the whole server-sent stream
    assert.match(body, /"content":"[^"]/, "no content in the stream");
    assert.match(body, /data: \[DONE\]/);
    await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 900_000 });
    const bubble = page.locator(".msg.assistant .bubble").nth(before);
    await bubble.filter({ hasText: /\S/ }).waitFor();
    return (await bubble.textContent()) ?? "";
  }

  before(async () => {
    ensureRendererBuilt();
    // The core's environment: the trainer worker is forked with it (WorkerClient: { ...process.env, ...opts.env }).
    process.env.CLAWRL_TRAINER_RAM_LIMIT = LIMIT;
    core = await startCore({
      model: await tinyModel({ arch: "qwen2" }),
      port: 0,
      dataDir: tempDir("clawrl-e2e-refused-"),
      token,
      engine: { maxContextSize: 512, sequences: 2, threads: 1, backend: "cpu" },
      training: { restartBackoffMs: 200, worker: { niceness: 5 } },
    });
    // No held-back slice: the chat's one rated answer must make a sample (its session id is random).
    core.bus.emit("settings", { settings: core.store.updateSettings({ heldBackShare: 0 }) });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    // A tiny random model may ramble to the end of its context: cap its answers (the request still goes to the real core).
    // Greedy: sampled at the chat's defaults, its first token is sometimes the end of turn, an empty answer (CI saw one).
    await page.route("**/v1/chat/completions", (r) =>
      r.continue({ postData: JSON.stringify({ ...(r.request().postDataJSON() as object), max_tokens: 24, temperature: 0 }) }),
    );
    page.on("pageerror", (e) => pageProblems.push(`page error: ${e.message}`));
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
    if (saved === undefined) delete process.env.CLAWRL_TRAINER_RAM_LIMIT;
    else process.env.CLAWRL_TRAINER_RAM_LIMIT = saved;
  });

  test("Train now starts the trainer, which refuses the model; the Training page says learning is off, with needed vs available", async () => {
    await page.goto(`${core.url}/#/chat`);
    await page.getByRole("button", { name: "New chat" }).waitFor();
    assert.ok((await ask("Hello there")).length > 0, "the model answered");
    // A liked answer: a sample for the trainer.
    await page.getByRole("button", { name: "Thumbs up" }).last().click();
    await waitFor("a sample ready to train", async () => (await api(core, "GET", "/api/status")).json.training.samplesWaiting > 0, 60_000);

    await page.getByRole("link", { name: "Training" }).click();
    await page.getByRole("heading", { name: "Training" }).waitFor();
    const run = page.waitForResponse((r) => r.url().endsWith("/api/training/run"));
    await page.getByRole("button", { name: "Train now" }).click();
    assert.equal((await run).status(), 202);

    const alert = page.getByRole("alert", { name: "Learning is off" });
    await alert.waitFor({ timeout: 300_000 });
    const text = (await alert.textContent()) ?? "";
    assert.equal(await page.locator('[aria-label="Learner"] .card-value').first().textContent(), "Learning off");
    assert.match(text, /Learning is off for this model\./);
    assert.match(text, /it needs [\d.]+ MB of RAM \(100 MB available\)/, text);
    assert.match(text, /cannot train qwen2 .* on wasm: .* of RAM, 100 MiB available/, text);

    const st = (await api(core, "GET", "/api/status")).json.training;
    assert.equal(st.memory.fits, false);
    assert.equal(st.memory.availableHostBytes, 100 * 2 ** 20);
    assert.ok(st.memory.needHostBytes > st.memory.availableHostBytes);
    assert.equal(st.state, "error");
    assert.equal(st.backend, "wasm", "the backend the refused plan was made for");
    assert.match(st.lastError, /^learning is off for this model/);
    assert.equal(st.trainerPid, null, "the refused trainer is not kept running");
    // Nor restarted as after a crash (the restart back-off here is 200 ms).
    await new Promise((r) => setTimeout(r, 1500));
    const later = (await api(core, "GET", "/api/status")).json.training;
    assert.equal(later.state, "error");
    assert.equal(later.restarts, 0);
    assert.equal(later.trainerPid, null);
    await screenshot(page, "training-refused");
  });

  test("chat still answers after the trainer refused (the model serves)", async () => {
    await page.getByRole("link", { name: "Chat" }).click();
    await page.getByRole("button", { name: "New chat" }).click();
    assert.ok((await ask("Are you still there?")).length > 0, "the model answered");
    assert.equal((await api(core, "GET", "/api/status")).json.training.memory.fits, false);
  });

  test("the Models page shows the served model's live verdict, and the catalog's under the same limit", async () => {
    await page.getByRole("link", { name: "Models" }).click();
    await page.getByRole("heading", { name: "Catalog" }).waitFor();
    await page.getByText("Training hereToo large").waitFor();
    const note = page.getByRole("status").filter({ hasText: "Too large to train here" });
    assert.match((await note.textContent()) ?? "", /learning needs [\d.]+ MB of RAM \(100 MB available\)/);
    // GET /api/models: the served model's verdict is the trainer's own plan.
    const models = (await api(core, "GET", "/api/models")).json;
    assert.equal(models.active.training.fits, false);
    assert.equal(models.active.training.backend, "wasm");
    assert.equal(models.active.training.availableHostBytes, 100 * 2 ** 20);
    const verdicts = await page.locator("tbody tr .train-verdict").allTextContents();
    assert.equal(verdicts.length, models.catalog.length);
    for (const v of verdicts) assert.match(v, /^Too large to train here: needs .*of RAM \(100 MB available\)/);
    await screenshot(page, "models-refused");
  });

  test("dark theme: the Training page's notice reads", async () => {
    await page.getByRole("button", { name: "Switch to dark theme" }).click();
    await page.getByRole("link", { name: "Training" }).click();
    await page.getByRole("alert", { name: "Learning is off" }).waitFor();
    await screenshot(page, "training-refused-dark");
    await page.getByRole("button", { name: "Switch to light theme" }).click();
    assert.deepEqual(pageProblems, []);
  });
});
