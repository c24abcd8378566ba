// The Training page's drift from the base model over time (one point per candidate, from the
// checkpoints' gate metrics, with the gate's budget), the notice of a rollback the learner made
// by itself, and a rolled-back checkpoint on the Checkpoints page. Playwright answers
// /api/training and /api/checkpoints with the shapes the real routes return
// (electron/core/server/routes/training.ts); everything else is the real core. The real routes'
// answers are checked in test/training/gate.test.ts and rollback.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";

const hour = 3600_000;
const t0 = Date.now() - 12 * hour;
const BUDGET = 0.5;
const REASON =
  "its answers were rated worse than checkpoint 7's: mean reward −0.60 over its last 10 rated turns vs +0.45 over 20 (one-sided Welch t-test p = 0.00031 < 0.01, drop ≥ 0.25)";
// Drift grows with each published step; candidate 8 went over the budget and was rejected; 9 was served, then rolled back.
const drift = [0.02, 0.05, 0.09, 0.14, 0.2, 0.27, 0.33, 0.56, 0.41, 0.36];
const verdictOf = (n: number) => (n === 8 ? "rejected" : n === 9 ? "reverted" : "published");
const checkpoints = drift.map((d, i) => {
  const n = i + 1;
  return {
    n,
    version: `ckpt-${n}`,
    // trained here, on the model served (as GET /api/checkpoints says of each)
    imported: false,
    model: null,
    forServedModel: true,
    createdAt: new Date(t0 + n * hour).toISOString(),
    parent: n === 10 ? 7 : n > 1 ? n - 1 : null,
    samples: 16,
    meanReward: 0.1 + 0.05 * n,
    loss: 0.9 - 0.05 * n,
    kl: 0.02,
    verdict: verdictOf(n),
    gate: {
      verdict: n === 8 ? "rejected" : "published",
      reasons: n === 8 ? [`KL to the base model on recent prompts 0.560 is above the drift budget ${BUDGET}`] : [],
      klBound: 0.05,
      driftBudget: BUDGET,
      klToBase: { recent: d, heldBack: d * 1.15, recentPositions: 300, heldBackPositions: 120 },
      fluencyMargin: 0.3,
      fluency: n === 8 ? null : { candidate: -1.4 - d * 0.6, base: -1.4, answers: 16, tokens: 700, seconds: 2 },
    },
    reverted: n === 9 ? { at: new Date(t0 + 9.5 * hour).toISOString(), reason: REASON, rule: "reward", to: 7 } : null,
    klToBase: { recent: d, heldBack: d * 1.15, recentPositions: 300, heldBackPositions: 120 },
    fluency: null,
    totalSteps: n * 4,
    swapPauseMs: 3,
    pinned: false,
  };
});
const active = 10;

describe("drift from the base model and rollbacks on the Training and Checkpoints pages", { skip: browserMissing() ?? false, timeout: 300_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const token = "drift-token-0123456789";

  before(async () => {
    ensureRendererBuilt();
    core = await startCore({ port: 0, dataDir: tempDir("clawrl-drift-"), token });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.route("**/api/checkpoints", (r) =>
      r.fulfill({ json: { checkpoints: checkpoints.map((c) => ({ ...c, active: c.n === active })).reverse(), active: `ckpt-${active}` } }),
    );
    await page.route("**/api/training", (r) =>
      r.fulfill({
        json: {
          training: {
            state: "idle",
            paused: false,
            step: null,
            steps: null,
            loss: null,
            runId: null,
            samplesWaiting: 3,
            batchSize: 16,
            backend: "wasm",
            device: "wasm (simd, 2 threads)",
            activeCheckpoint: active,
            lastError: null,
            lrScale: 0.5,
            lastSwap: { pauseMs: 3, version: `ckpt-${active}`, at: new Date().toISOString() },
            trainerPid: 4242,
            restarts: 0,
            judgeQueue: 0,
            watch: {
              checkpoint: 10,
              version: "ckpt-10",
              parent: 7,
              parentVersion: "ckpt-7",
              since: new Date().toISOString(),
              reward: { child: { n: 5, mean: 0.6 }, parent: { n: 20, mean: 0.45 }, diff: 0.15, t: 0.5, df: 9, p: 0.7 },
              fluency: null,
              checkedAt: new Date().toISOString(),
            },
            lastRevert: { ...checkpoints[8].reverted, checkpoint: 9 },
          },
          history: checkpoints.map((c) => ({
            n: c.n,
            at: c.createdAt,
            meanReward: c.meanReward,
            loss: c.loss,
            kl: c.kl,
            klToBase: c.gate.klToBase.recent,
            klToBaseHeldBack: c.gate.klToBase.heldBack,
            driftBudget: BUDGET,
            fluency: c.gate.fluency?.candidate ?? null,
            fluencyBase: c.gate.fluency?.base ?? null,
            verdict: c.verdict,
            swapPauseMs: c.swapPauseMs,
          })),
          recentJudged: [],
        },
      }),
    );
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  test("Training: drift over time against the budget, the rollback notice, the watch on the new checkpoint", async () => {
    await page.getByRole("link", { name: "Training" }).click();
    const chart = page
      .getByRole("figure")
      .filter({ has: page.getByRole("img", { name: "Distance from the original model (drift: KL to the base model) over time" }) });
    await chart.waitFor();
    // Recent prompts (solid, a point per candidate) and held-back turns (dashed), the budget as a limit line.
    assert.equal(await chart.locator("svg path").count(), 2);
    assert.equal(await chart.locator("svg circle").count(), 10);
    assert.equal(await chart.locator(".chart-limit text").textContent(), "most allowed 0.5");
    assert.match((await chart.locator("figcaption").textContent()) ?? "", /Distance from the original model \(drift: KL to the base model\)0\.36/);
    assert.match((await chart.locator(".chart-legend").textContent()) ?? "", /recent prompts.*conversations kept aside/);
    const notice = page.getByRole("status", { name: "Rolled back" });
    assert.match(
      (await notice.textContent()) ?? "",
      /^Rolled back ckpt-9 to ckpt-7 by itself \(.*\): its answers were rated worse than checkpoint 7's: mean reward −0\.60/,
    );
    assert.match(
      (await page.getByLabel("Watch on the served adapter").textContent()) ?? "",
      /Watching ckpt-10 against ckpt-7: 5 rated turns so far \(mean reward \+0\.60 vs \+0\.45\)/,
    );
    await page.getByRole("img", { name: "Gate verdicts: 8 published of 10" }).waitFor();
    assert.equal(await page.locator(".verdicts .verdict.reverted").count(), 1);
    await screenshot(page, "training-drift");
  });

  test("Checkpoints: the rolled-back one says so and why, and can still be served by hand", async () => {
    await page.getByRole("link", { name: "Checkpoints" }).click();
    const row = page.locator("tbody tr").filter({ hasText: "ckpt-9" });
    await row.waitFor();
    assert.match((await row.textContent()) ?? "", /rolled back/);
    assert.match((await row.locator(".revert-reason").textContent()) ?? "", /rated worse than checkpoint 7's/);
    // Back or forward depends on what the (real, model-less) core says serves: either way, the button.
    assert.equal(await row.getByRole("button", { name: /^Roll (back|forward)$/ }).isDisabled(), false);
    assert.equal(
      await page
        .locator("tbody tr")
        .filter({ hasText: "ckpt-8" })
        .getByRole("button", { name: /^Roll (back|forward)$/ })
        .isDisabled(),
      true,
    );
    await screenshot(page, "checkpoints-reverted");
  });
});
