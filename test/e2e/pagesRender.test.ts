// Training, Checkpoints and Models pages with data. Their routes (issues 5 and 8) are built in
// parallel with this UI, so until they land, Playwright answers them in the browser with the
// shapes those issues describe; everything else (page, core, status, settings) is real.
// The real-route tests are in ui.test.ts and run as soon as the routes exist.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page, Route } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";

const hour = 3600_000;
const t0 = Date.now() - 5 * hour;
const checkpoints = [1, 2, 3, 4].map((id) => ({
  id,
  createdAt: new Date(t0 + id * hour).toISOString(),
  path: `checkpoints/${id}/adapter.gguf`,
  parent: id > 1 ? id - 1 : null,
  metrics: { samples: 16, meanReward: [0.1, 0.35, 0.2, 0.6][id - 1], loss: [0.9, 0.7, 0.75, 0.5][id - 1], kl: [0.01, 0.02, 0.08, 0.03][id - 1], gate: { verdict: id === 3 ? "rejected" : "published" } },
  pinned: id === 1,
}));

describe("Training, Checkpoints and Models pages", { skip: browserMissing() ?? false, timeout: 300_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const token = "pages-token-0123456789";
  const calls: { method: string; path: string; body: unknown }[] = [];
  let active = 4;

  /** Waits until the page has called `path` (the click resolves before the request is routed). */
  const called = async (path: string) => {
    while (!calls.some((c) => c.path === path)) await new Promise((res) => setTimeout(res, 50));
  };

  const record = (r: Route) => {
    const req = r.request();
    calls.push({ method: req.method(), path: new URL(req.url()).pathname, body: req.postData() ? req.postDataJSON() : null });
  };

  before(async () => {
    ensureRendererBuilt();
    core = await startCore({ port: 0, dataDir: tempDir("clawrl-pages-"), token });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.route("**/api/checkpoints", (r) => r.fulfill({ json: { checkpoints: checkpoints.map((c) => ({ ...c, active: c.id === active })), active } }));
    await page.route(/\/api\/checkpoints\/\d+\/(activate|pin)$/, async (r) => {
      record(r);
      const m = /checkpoints\/(\d+)\/(\w+)$/.exec(r.request().url())!;
      if (m[2] === "activate") {
        await new Promise((res) => setTimeout(res, 800)); // long enough to see the swap in progress
        active = Number(m[1]);
      }
      await r.fulfill({ json: { ok: true } });
    });
    await page.route("**/api/training", (r) =>
      r.fulfill({
        json: {
          training: { state: "training", step: 3, steps: 8, samplesReady: 5, judgeQueue: 2, backend: "wasm", device: "CPU" },
          recentJudged: [
            { turnId: "t1", time: new Date().toISOString(), text: "Paris is the capital of France.", judge: { reward: 1, votes: [{ score: 1, text: "" }, { score: 1, text: "" }, { score: 0, text: "" }], hints: [] }, reward: 1 },
            { turnId: "t2", time: new Date().toISOString(), text: "The answer is 5.", feedback: { thumbs: "down", hint: "Show the working." }, judge: { reward: -1, votes: [{ score: -1, text: "" }, { score: -1, text: "" }, { score: null, text: "" }], hints: [] }, reward: -1 },
          ],
        },
      }),
    );
    await page.route(/\/api\/training\/(run|pause|resume)$/, (r) => {
      record(r);
      return r.fulfill({ json: { ok: true } });
    });
    await page.route("**/api/models", (r) =>
      r.fulfill({
        json: {
          active: { id: "qwen2.5-0.5b-instruct-q4_k_m", path: "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf", sizeBytes: 491_400_032, quantization: "Q4_K_M", contextSize: 32768, gpuLayers: 25, arch: "qwen2", trainable: true },
          catalog: [
            { id: "qwen2.5-0.5b-instruct-q4_k_m", name: "Qwen2.5 0.5B Instruct (Q4_K_M)", sizeBytes: 491_400_032, arch: "qwen2", license: "Apache-2.0", installed: true },
            { id: "qwen3-1.7b-q8_0", name: "Qwen3 1.7B (Q8_0)", sizeBytes: 1_834_426_016, arch: "qwen3", license: "Apache-2.0", installed: false, download: { state: "downloading", bytes: 734_003_200, total: 1_834_426_016, speed: 12_582_912, eta: 87 } },
            { id: "llama-3.2-1b-instruct-q8_0", name: "Llama 3.2 1B Instruct (Q8_0)", sizeBytes: 1_321_083_104, arch: "llama", license: "Llama 3.2 Community", installed: false },
          ],
        },
      }),
    );
    await page.route(/\/api\/models\/[^/]+\/(pause|resume|cancel)$/, (r) => {
      record(r);
      return r.fulfill({ json: { ok: true } });
    });
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  test("Checkpoints: list, active marker, pin, and Roll back with confirmation and a visible swap", async () => {
    await page.getByRole("link", { name: "Checkpoints" }).click();
    const rows = page.locator("tbody tr");
    await rows.first().waitFor();
    assert.equal(await rows.count(), 4);
    const first = rows.first(); // newest first
    assert.match((await first.textContent()) ?? "", /v4.*active/);
    assert.ok(await first.getByRole("button", { name: "Roll back" }).isDisabled(), "the active checkpoint cannot be rolled back to");
    assert.match((await rows.nth(1).textContent()) ?? "", /rejected/);
    await screenshot(page, "checkpoints-list");

    const v2 = rows.filter({ hasText: "v2" });
    await v2.getByRole("button", { name: "Pin" }).click();
    await v2.getByRole("button", { name: "Roll back" }).click();
    const dialog = page.getByRole("dialog", { name: "Roll back to v2?" });
    await dialog.waitFor();
    await screenshot(page, "checkpoints-confirm");
    await dialog.getByRole("button", { name: "Confirm roll back" }).click();
    await page.getByRole("status").filter({ hasText: "Swapping to v2" }).waitFor();
    await screenshot(page, "checkpoints-swapping");
    await page.getByText("Now serving v2").waitFor();
    assert.deepEqual(
      calls.filter((c) => c.path.startsWith("/api/checkpoints/")).map((c) => [c.path, c.body]),
      [
        ["/api/checkpoints/2/pin", { pinned: true }],
        ["/api/checkpoints/2/activate", {}],
      ],
    );
    await rows.filter({ hasText: "v2" }).getByText("active").waitFor();
  });

  test("Training: state, backend, queues, charts over time, judged turns, Train now", async () => {
    await page.getByRole("link", { name: "Training" }).click();
    const learner = page.getByRole("group", { name: "Learner" });
    await learner.getByText("Training step 3 of 8").waitFor();
    assert.match((await learner.textContent()) ?? "", /wasm, CPU/);
    assert.match((await learner.textContent()) ?? "", /Samples waiting5/);
    assert.match((await learner.textContent()) ?? "", /Judge queue2/);
    // One line per metric, one point per checkpoint; the verdict strip shows 3 of 4 published.
    assert.equal(await page.locator(".chart svg path").count(), 3);
    assert.equal(await page.locator(".chart svg circle").count(), 12);
    await page.getByRole("img", { name: "Gate verdicts: 3 published of 4" }).waitFor();
    const judged = page.locator("table tbody tr");
    assert.equal(await judged.count(), 2);
    assert.match((await judged.nth(1).textContent()) ?? "", /−1 −1 ✗.*Show the working\./);
    await screenshot(page, "training-data");
    await page.getByRole("button", { name: "Train now" }).click();
    await called("/api/training/run");
    assert.equal(calls.find((c) => c.path === "/api/training/run")?.method, "POST");
  });

  test("Models: active model and a download's progress with pause and cancel", async () => {
    await page.getByRole("link", { name: "Models" }).click();
    await page.getByText("Q4_K_M").first().waitFor();
    assert.match((await page.locator(".cards").textContent()) ?? "", /32,768 tokens/);
    const bar = page.getByRole("progressbar", { name: "Download of Qwen3 1.7B (Q8_0)" });
    assert.equal(await bar.getAttribute("value"), "734003200");
    const row = page.locator("tbody tr").filter({ hasText: "Qwen3 1.7B" });
    assert.match((await row.textContent()) ?? "", /700 MB of 1\.7 GB · 12\.0 MB\/s · 1 min 27 s left/);
    await row.getByRole("button", { name: "Pause" }).click();
    await row.getByRole("button", { name: "Cancel" }).click();
    await called("/api/models/qwen3-1.7b-q8_0/pause");
    await called("/api/models/qwen3-1.7b-q8_0/cancel");
    await screenshot(page, "models-data");
  });
});
