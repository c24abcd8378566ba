// Training, Checkpoints and Models pages with data a fresh test core does not have (a run in
// progress, a rejected candidate, judge votes, a download): Playwright answers those routes in
// the browser with the shapes the real routes return (electron/core/server/routes/training.ts,
// apiModels.ts); everything else (page, core, status, settings) is real. The same pages
// against the real learning loop are in ui.test.ts; GET /api/training's real answer is
// checked in test/training/trainingDetail.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page, Route } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import type { CheckpointsReply, CheckpointView, TrainingStatusView } from "../../electron/core/api/training.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { callApi } from "../helpers/api.js";

const hour = 3600_000;
const t0 = Date.now() - 5 * hour;
// GET /api/checkpoints's items (checkpointView), oldest first here; the route lists newest first.
const checkpoints = [1, 2, 3, 4].map((n) => ({
  n,
  version: `ckpt-${n}`,
  createdAt: new Date(t0 + n * hour).toISOString(),
  parent: n > 1 ? n - 1 : null,
  samples: 16,
  meanReward: [0.1, 0.35, 0.2, 0.6][n - 1],
  loss: [0.9, 0.7, 0.75, 0.5][n - 1],
  kl: [0.01, 0.02, 0.08, 0.03][n - 1],
  verdict: n === 3 ? "rejected" : "published",
  gate: { verdict: n === 3 ? "rejected" : "published", reasons: n === 3 ? ["KL to the serving adapter 0.0800 is above the bound 0.05"] : [] },
  totalSteps: n * 4,
  swapPauseMs: n === 3 ? null : 3,
  pinned: n === 1,
  imported: false,
  model: "qwen2.5-0.5b-instruct-q4_k_m.gguf",
  forServedModel: true,
  reverted: null,
  klToBase: null,
  fluency: null,
})) satisfies Omit<CheckpointView, "active">[];
/** Checkpoints the page lists beside those (one test adds some trained on another model). */
let moreCheckpoints: CheckpointView[] = [];
/** The learner's phase both /api/status and /api/training report: step 4 of 8 under way, 45% of the run done. */
const trainingRun: Pick<TrainingStatusView, "state" | "step" | "steps" | "stepSeconds" | "progress"> = {
  state: "training",
  step: 3,
  steps: 8,
  stepSeconds: 95,
  progress: { part: "steps", fraction: 0.45, secondsLeft: 470 },
};
let trainingNow = trainingRun;

/** A turn as GET /api/training's recentJudged lists it (the store's TurnView). */
function judgedTurn(turnId: string, question: string, text: string, extra: object) {
  const time = new Date().toISOString();
  return {
    turnId,
    sessionId: "s1",
    index: 0,
    type: "main",
    startedAt: time,
    time,
    fromUi: true,
    model: "tiny",
    adapter: "ckpt-2",
    messages: [{ role: "user", content: question }],
    text,
    finishReason: "stop",
    sampling: { temperature: 1, topP: 1 },
    sessionDone: false,
    promptTokenCount: 12,
    responseTokenCount: 8,
    nextState: null,
    feedback: null,
    judge: null,
    reward: null,
    rewardSource: null,
    ...extra,
  };
}

/** GET /api/models's `training` of a model that trains here on wasm (models/trainability.ts). */
const trains = (maxContext: number) => ({
  fits: true,
  backend: "wasm",
  maxContext,
  summary: `all weights streamed from f32 copies in RAM, context ${maxContext} tokens`,
  limit: null,
  weights: "streamed",
  needDeviceBytes: 1.2 * 2 ** 30,
  availableDeviceBytes: 3.4 * 2 ** 30,
  needHostBytes: 2.9 * 2 ** 30,
  availableHostBytes: 20 * 2 ** 30,
});

describe("Training, Checkpoints and Models pages", { skip: browserMissing() ?? false, timeout: 300_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const token = "pages-token-0123456789";
  const calls: { method: string; path: string; body: unknown }[] = [];
  let active = 4;
  let releaseActivation!: () => void;
  const activationHeld = new Promise<void>((res) => (releaseActivation = res));

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
    // The status agrees with the scripted pages: the same model as /api/models, the active checkpoint served.
    await page.route("**/api/status", (r) =>
      r.fulfill({
        json: {
          model: {
            id: "qwen2.5-0.5b-instruct-q4_k_m",
            name: "Qwen2.5 0.5B Instruct",
            path: "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
            contextSize: 32768,
            sizeBytes: 491_400_032,
            quantization: "Q4_K_M",
          },
          backend: "cpu",
          gpu: null,
          adapter: `ckpt-${active}`,
          modelSwitch: null,
          training: {
            ...trainingNow,
            samplesWaiting: 5,
            judgeQueue: 2,
            backend: "wasm",
            device: "CPU",
            activeCheckpoint: active,
            lastSwap: { pauseMs: 3, version: `ckpt-${active}`, at: new Date().toISOString() },
          },
          sessions: 2,
          turns: 2,
        },
      }),
    );
    await page.route("**/api/checkpoints", (r) =>
      r.fulfill({
        json: {
          checkpoints: [...checkpoints.map((c) => ({ ...c, active: c.n === active })).reverse(), ...moreCheckpoints],
          active: `ckpt-${active}`,
        } satisfies CheckpointsReply,
      }),
    );
    await page.route(/\/api\/checkpoints\/\d+\/(activate|pin)$/, async (r) => {
      record(r);
      const m = /checkpoints\/(\d+)\/(\w+)$/.exec(r.request().url())!;
      const c = checkpoints[Number(m[1]) - 1];
      if (m[2] === "activate") {
        await activationHeld; // until the test has seen the swap in progress
        active = c.n;
        return r.fulfill({ json: { checkpoint: { ...c, active: true }, swap: { pauseMs: 3, drained: 0, version: c.version } } });
      }
      c.pinned = (r.request().postDataJSON() as { pinned: boolean }).pinned;
      await r.fulfill({ json: { checkpoint: { ...c, active: c.n === active } } });
    });
    await page.route("**/api/training", (r) =>
      r.fulfill({
        json: {
          training: {
            ...trainingNow,
            paused: false,
            loss: 0.61,
            runId: "r1",
            samplesWaiting: 5,
            batchSize: 16,
            backend: "wasm",
            device: "CPU",
            activeCheckpoint: active,
            lastError: null,
            lrScale: 1,
            lastSwap: { pauseMs: 3, version: `ckpt-${active}`, at: new Date().toISOString() },
            trainerPid: 4242,
            trainerMemory: { rssBytes: 1.6 * 2 ** 30, tensorBytes: 1.2 * 2 ** 30, wasmHeapBytes: 1.3 * 2 ** 30, at: new Date().toISOString() },
            restarts: 0,
            judgeQueue: 2,
          },
          // The route's history points (no drift figures or fluency recorded for these candidates).
          history: checkpoints.map((c) => ({
            n: c.n,
            at: c.createdAt,
            meanReward: c.meanReward,
            loss: c.loss,
            kl: c.kl,
            klToBase: null,
            klToBaseHeldBack: null,
            driftBudget: null,
            fluency: null,
            fluencyBase: null,
            verdict: c.verdict,
            swapPauseMs: c.swapPauseMs,
          })),
          recentJudged: [
            judgedTurn("t1", "What is the capital of France?", "Paris is the capital of France.", {
              judge: {
                time: new Date().toISOString(),
                reward: 1,
                votes: [
                  { score: 1, text: "\\boxed{1}" },
                  { score: 1, text: "\\boxed{1}" },
                  { score: 0, text: "\\boxed{0}" },
                ],
                hints: [],
                representative: null,
                judge: "base",
              },
              reward: 1,
              rewardSource: "judge",
            }),
            judgedTurn("t2", "What is 2+2?", "The answer is 5.", {
              feedback: { thumbs: "down", hint: "Show the working.", time: new Date().toISOString() },
              judge: {
                time: new Date().toISOString(),
                reward: -1,
                votes: [
                  { score: -1, text: "\\boxed{-1}" },
                  { score: -1, text: "\\boxed{-1}" },
                  { score: null, text: "no verdict" },
                ],
                hints: [],
                representative: null,
                judge: "base",
              },
              reward: -1,
              rewardSource: "thumbs",
            }),
            judgedTurn("t3", "Explain photosynthesis.", "Plants eat light and it is a long story that goes on and on.", {
              judge: {
                time: new Date().toISOString(),
                reward: -1,
                votes: [
                  { score: -1, text: "\\boxed{-1}" },
                  { score: -1, text: "\\boxed{-1}" },
                  { score: -1, text: "\\boxed{-1}" },
                ],
                hints: ["Answer in two sentences."],
                representative: null,
                judge: "base",
              },
              reward: -1,
              rewardSource: "judge",
            }),
          ],
        },
      }),
    );
    // Preferences: none until the user keeps the judge's hint of t3 (Training page).
    const kept: Array<{ id: string; text: string; source: string; status: string; turnIds: string[] }> = [];
    await page.route("**/api/preferences", async (r) => {
      if (r.request().method() === "POST") {
        record(r);
        const body = r.request().postDataJSON() as { text: string; turnId: string };
        kept.push({ id: "pref-1", text: body.text, source: "judge", status: "active", turnIds: [body.turnId] });
        return r.fulfill({ status: 201, json: { preference: kept[0] } });
      }
      return r.fulfill({
        json: { preferences: kept, deleted: [], block: { enabled: true, outsideClients: true, budget: 256, text: "", tokens: null, ids: [] }, fromJudge: true },
      });
    });
    await page.route(/\/api\/training\/(run|pause|resume)$/, (r) => {
      record(r);
      return r.fulfill({ json: { ok: true } });
    });
    await page.route("**/api/models", (r) =>
      r.fulfill({
        json: {
          active: {
            id: "qwen2.5-0.5b-instruct-q4_k_m",
            name: "Qwen2.5 0.5B Instruct",
            path: "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
            sizeBytes: 491_400_032,
            quantization: "Q4_K_M",
            contextSize: 32768,
            gpuLayers: 25,
            architecture: "qwen2",
            trainable: true,
            training: trains(1024),
          },
          installed: [
            {
              id: "qwen2.5-0.5b-instruct-q4_k_m",
              path: "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
              origin: "catalog",
              name: "Qwen2.5 0.5B Instruct",
              architecture: "qwen2",
              trainable: true,
              sizeBytes: 491_400_032,
              training: trains(1024),
            },
            {
              id: "local:phi-3-mini",
              path: "/models/phi-3-mini.gguf",
              origin: "import",
              name: "Phi 3 mini",
              architecture: "phi3",
              trainable: false,
              sizeBytes: 2_393_231_072,
              training: {
                fits: false,
                backend: "wasm",
                maxContext: 0,
                summary: "the trainer does not support architecture phi3 (it supports llama, qwen2, qwen3): serve only",
                limit: "architecture",
                weights: null,
                needDeviceBytes: null,
                availableDeviceBytes: null,
                needHostBytes: null,
                availableHostBytes: null,
              },
            },
          ],
          catalog: [
            {
              id: "qwen2.5-0.5b-instruct-q4_k_m",
              name: "Qwen2.5 0.5B Instruct (Q4_K_M)",
              sizeBytes: 491_400_032,
              architecture: "qwen2",
              license: "Apache-2.0",
              installed: true,
              serveMemoryBytes: 900_000_000,
              training: trains(1024),
            },
            {
              id: "qwen3-1.7b-q8_0",
              name: "Qwen3 1.7B (Q8_0)",
              sizeBytes: 1_834_426_016,
              architecture: "qwen3",
              license: "Apache-2.0",
              installed: false,
              download: { state: "downloading", bytes: 734_003_200, total: 1_834_426_016, speed: 12_582_912, etaSeconds: 87 },
              training: trains(700),
            },
            {
              id: "llama-3.2-3b-instruct",
              name: "Llama 3.2 3B Instruct",
              sizeBytes: 2_020_000_000,
              architecture: "llama",
              license: "Llama 3.2 Community",
              installed: false,
              training: {
                fits: false,
                backend: "wasm",
                maxContext: 0,
                summary: "cannot train llama (28 layers, dim 3072, vocab 128256) on wasm: …",
                limit: "memory",
                weights: "streamed",
                needDeviceBytes: 6.5 * 2 ** 30,
                availableDeviceBytes: 3.4 * 2 ** 30,
                needHostBytes: 9.1 * 2 ** 30,
                availableHostBytes: 6 * 2 ** 30,
              },
            },
          ],
          // the rest of the contract's ModelsReply (no recommendation note on this page)
          embeddingCatalog: [],
          downloads: [],
          recommendation: { id: "qwen2.5-0.5b-instruct-q4_k_m", reason: "" },
          restartRequired: false,
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
    assert.equal(await rows.count(), 5);
    assert.match((await rows.last().textContent()) ?? "", /No adapter/);
    const first = rows.first(); // newest first
    assert.match((await first.textContent()) ?? "", /ckpt-4.*active/);
    assert.ok(await first.getByRole("button", { name: "Roll back" }).isDisabled(), "the active checkpoint cannot be rolled back to");
    assert.match((await rows.nth(1).textContent()) ?? "", /rejected/);
    assert.ok(await rows.nth(1).getByRole("button", { name: "Roll back" }).isDisabled(), "a candidate the gate rejected cannot be served");
    await screenshot(page, "checkpoints-list");

    const c2 = rows.filter({ hasText: "ckpt-2" });
    await c2.getByRole("button", { name: "Pin" }).click();
    await c2.getByRole("button", { name: "Roll back" }).click();
    const dialog = page.getByRole("dialog", { name: "Roll back to ckpt-2?" });
    await dialog.waitFor();
    await screenshot(page, "checkpoints-confirm");
    await dialog.getByRole("button", { name: "Confirm roll back" }).click();
    await page.getByRole("status").filter({ hasText: "Swapping to ckpt-2" }).waitFor();
    await screenshot(page, "checkpoints-swapping");
    releaseActivation();
    await page.getByText("Now serving ckpt-2").waitFor();
    assert.deepEqual(
      calls.filter((c) => c.path.startsWith("/api/checkpoints/")).map((c) => [c.path, c.body]),
      [
        ["/api/checkpoints/2/pin", { pinned: true }],
        ["/api/checkpoints/2/activate", {}],
      ],
    );
    await rows.filter({ hasText: "ckpt-2" }).getByText("active").waitFor();
  });

  test("Checkpoints trained on another model: a Model column, and Roll back says to serve that model", async () => {
    moreCheckpoints = [
      { ...checkpoints[0], n: 9, version: "ckpt-9", parent: null, pinned: false, model: "qwen3-1.7b-q4_k_m.gguf", forServedModel: false, active: false },
    ];
    try {
      await page.getByRole("link", { name: "Models" }).click();
      await page.getByRole("link", { name: "Checkpoints" }).click();
      const row = page.locator("tbody tr").filter({ hasText: "ckpt-9" });
      await row.waitFor();
      assert.deepEqual(await page.locator("thead th").allTextContents(), [
        "Version",
        "Time",
        "Answers",
        "Rating",
        "Change",
        "Safety check",
        "Model",
        "Actions",
      ]);
      assert.equal(await row.locator(".model-cell").getAttribute("title"), "qwen3-1.7b-q4_k_m.gguf");
      assert.match((await row.textContent()) ?? "", /qwen3-1\.7b-q4_k_m/);
      const [scrollW, clientW] = await page.evaluate<[number, number]>('(s => [s.scrollWidth, s.clientWidth])(document.querySelector(".table-scroll"))');
      assert.ok(scrollW <= clientW, `the table fits its card at 1280 px (${scrollW} > ${clientW})`);
      assert.match((await page.locator("tbody tr").filter({ hasText: "ckpt-2" }).textContent()) ?? "", /qwen2\.5-0\.5b-instruct-q4_k_m/);
      const rollBack = row.getByRole("button", { name: "Roll forward" });
      assert.ok(await rollBack.isDisabled(), "another model's adapter cannot be served on this one");
      assert.equal(await rollBack.getAttribute("title"), "Trained on qwen3-1.7b-q4_k_m.gguf: serve that model to use it");
      await screenshot(page, "checkpoints-other-model");
    } finally {
      moreCheckpoints = [];
    }
  });

  test("Training: state, backend, queues, charts over time, judged turns, Train now", async () => {
    await page.getByRole("link", { name: "Training" }).click();
    const learner = page.getByRole("group", { name: "Learner" });
    // The step under way, the time left at the run's rate so far (470 s), the run's share done.
    await learner.getByText("Training step 4 of 8 · about 8 min left").waitFor();
    assert.equal(await page.getByRole("progressbar", { name: "Training progress" }).getAttribute("value"), "0.45");
    // The backend in words, the exact backend and device in its details line.
    assert.match((await learner.textContent()) ?? "", /Learning onthe CPU \(WebAssembly\)wasm, CPU/);
    assert.match((await learner.textContent()) ?? "", /Answers ready to learn from5/);
    assert.match((await learner.textContent()) ?? "", /Answers waiting for the judge2/);
    assert.equal(await learner.getByText("Answers ready to learn from").getAttribute("title"), "samples waiting");
    assert.match(
      (await page.getByLabel("Trainer").textContent()) ?? "",
      /Training error \(loss\) 0\.61\. The trainer holds 1\.6 GB of memory \(the model and adapter 1\.2 GB\)\./,
    );
    // One line per metric, one point per checkpoint; the verdict strip shows 3 of 4 published.
    assert.equal(await page.locator(".chart svg path").count(), 3);
    assert.equal(await page.locator(".chart svg circle").count(), 12);
    await page.getByRole("img", { name: "Gate verdicts: 3 published of 4" }).waitFor();
    const judged = page.locator("table tbody tr");
    assert.equal(await judged.count(), 3);
    assert.match((await judged.nth(0).textContent()) ?? "", /What is the capital of France\?.*Paris is the capital of France\..*2 good, 1 neutral/);
    assert.match((await judged.nth(1).textContent()) ?? "", /What is 2\+2\?.*The answer is 5\..*2 bad, 1 no verdict · you: thumbs down.*Show the working\./);
    // The votes in words, with an accessible summary and the exact votes as a tooltip.
    const votes = judged.nth(1).getByLabel("2 of 3 judges: bad (2 bad, 1 no verdict)");
    assert.equal(await votes.getAttribute("title"), "Judge votes: −1 −1 no verdict");
    // A judge's hint can be kept as a preference from its row; the user's own hint already is one.
    assert.equal(
      await judged
        .nth(1)
        .getByRole("button", { name: /as a preference/ })
        .count(),
      0,
    );
    await judged.nth(2).getByRole("button", { name: "Keep “Answer in two sentences.” as a preference" }).click();
    await judged.nth(2).getByText("Kept as a preference").waitFor();
    assert.deepEqual(calls.find((c) => c.path === "/api/preferences")?.body, { text: "Answer in two sentences.", turnId: "t3" });
    await screenshot(page, "training-data");
    await page.getByRole("button", { name: "Train now" }).click();
    await called("/api/training/run");
    assert.equal(calls.find((c) => c.path === "/api/training/run")?.method, "POST");
  });

  test("Training: the gate's parts are named, with their progress and time left", async () => {
    try {
      trainingNow = { state: "evaluating", step: null, steps: null, stepSeconds: 95, progress: { part: "answers", fraction: 0.25, secondsLeft: 130 } };
      await page.getByRole("link", { name: "Chat" }).click();
      await page.getByRole("link", { name: "Training" }).click();
      await page.getByRole("group", { name: "Learner" }).getByText("Checking the new adapter · about 2 min left").waitFor();
      assert.equal(await page.getByRole("progressbar", { name: "Reading the new adapter's own answers" }).getAttribute("value"), "0.25");
      await page.getByText("Reading the new adapter's own answers · 25%").waitFor();
      await screenshot(page, "training-gate");
    } finally {
      trainingNow = trainingRun;
    }
  });

  test("Models: active model and a download's progress with pause and cancel", async () => {
    await page.getByRole("link", { name: "Models" }).click();
    await page.getByText("Q4_K_M").first().waitFor();
    assert.match((await page.locator(".cards").textContent()) ?? "", /32,768 tokens/);
    // Whether each model trains on this machine: the served one, installed ones, the catalog.
    // The served model's card fills in from /api/status first, its training verdict from /api/models after: wait for it.
    await page.locator(".cards", { hasText: /Training hereYes · wasm · context 1,024/ }).waitFor();
    const verdict = async (name: string) => (await page.locator("tbody tr").filter({ hasText: name }).locator(".train-verdict").textContent()) ?? "";
    assert.equal(await verdict("Phi 3 mini"), "Serve only");
    assert.equal(await verdict("Qwen3 1.7B"), "Trains here · wasm · context 700");
    assert.equal(await verdict("Llama 3.2 3B"), "Too large to train here: needs 6.5 GB of wasm memory (3.4 GB available) and 9.1 GB of RAM (6.0 GB available)");
    assert.equal(await page.getByText(/train \d/).count(), 0, "no hand-made training sizes any more");
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

  test("Settings: one Save for the whole page; leaving with unsaved changes asks first", async () => {
    await page.getByRole("link", { name: "Settings" }).click();
    const save = page.getByRole("button", { name: "Save settings" });
    await save.waitFor();
    assert.equal(await page.getByRole("button", { name: /^Save/ }).count(), 1, "one Save button, the chat defaults included");
    assert.equal(await save.getAttribute("aria-disabled"), "true", "nothing to save yet");
    // The machine check (issue 33) is on the page, ready to run.
    await page.getByRole("heading", { name: "This machine" }).waitFor();
    assert.equal(await page.getByRole("button", { name: "Check this machine" }).isDisabled(), false);
    const batch = page.getByRole("spinbutton", { name: /Answers per lesson/ });
    const before = await batch.inputValue();
    // The exact term stays in reach: a details line under the plain label.
    await page.getByText("batch size " + before, { exact: true }).waitFor();
    await batch.fill(String(Number(before) + 5));
    assert.equal(await save.getAttribute("aria-disabled"), "false");

    // Another page in the nav: the dialog; Keep editing stays with the change.
    await page.getByRole("link", { name: "Training" }).click();
    const dialog = page.getByRole("dialog", { name: "Discard changes?" });
    await dialog.waitFor();
    await screenshot(page, "settings-discard-dialog");
    await dialog.getByRole("button", { name: "Keep editing" }).click();
    await dialog.waitFor({ state: "detached" });
    assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Settings");
    assert.equal(await batch.inputValue(), String(Number(before) + 5));
    assert.match(page.url(), /#\/settings$/);
    // A link inside the page (a hash change) asks too.
    await page.evaluate("window.location.hash = '#/checkpoints'");
    await dialog.waitFor();
    assert.match(page.url(), /#\/settings$/, "the address stays while the dialog asks");
    // Discard: the other page opens, and the change is gone.
    await dialog.getByRole("button", { name: "Discard" }).click();
    await page.getByRole("heading", { name: "Checkpoints" }).waitFor();
    assert.equal((await callApi(core, "GET", "/api/settings")).body.batchSize, Number(before), "nothing saved");
    await page.getByRole("link", { name: "Settings" }).click();
    assert.equal(await batch.inputValue(), before);

    // A chat default and a learning setting, saved together by the one Save; then leaving asks nothing.
    await batch.fill(String(Number(before) + 1));
    await page.getByRole("textbox", { name: "System prompt" }).fill("Be brief.");
    await save.click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    assert.equal(await save.getAttribute("aria-disabled"), "true");
    const settings = (await callApi(core, "GET", "/api/settings")).body;
    assert.equal(settings.batchSize, Number(before) + 1);
    assert.equal(settings.chatDefaults.systemPrompt, "Be brief.");
    await page.getByRole("link", { name: "Training" }).click();
    await page.getByRole("heading", { name: "Training" }).waitFor();
    assert.equal(await dialog.count(), 0);
  });

  for (const width of [1280, 800]) {
    for (const theme of ["light", "dark"] as const) {
      test(`Training, Checkpoints and Models fit ${width} px (${theme}): tables scroll inside their card, the page never does`, async () => {
        await page.setViewportSize({ width, height: 900 });
        const current = await page.evaluate<string>("document.documentElement.dataset.theme");
        if (current !== theme) await page.getByRole("button", { name: `Switch to ${theme} theme` }).click();
        for (const [link, ready] of [
          ["Training", "Latest judged turns"],
          ["Checkpoints", "ckpt-4"],
          ["Models", "Q4_K_M"],
          ["Settings", "API access"],
        ] as const) {
          await page.getByRole("link", { name: link }).click();
          await page.getByText(ready).first().waitFor();
          const [doc, vw] = await page.evaluate<[number, number]>("[document.documentElement.scrollWidth, window.innerWidth]");
          assert.ok(doc <= vw, `${link} at ${width} px: document ${doc} px wide in a ${vw} px window`);
          // Every table's box ends inside the page's content area.
          const overflow = await page.evaluate<number[]>(
            "(() => { const m = document.querySelector('.page').getBoundingClientRect().right; return [...document.querySelectorAll('.table-scroll')].map((t) => t.getBoundingClientRect().right - m).filter((d) => d > 1); })()",
          );
          assert.deepEqual(overflow, [], `${link}: a table runs past the page's edge`);
          await screenshot(page, `pages-${link.toLowerCase()}-${width}-${theme}`);
        }
        // The status line and the served adapter agree with the Checkpoints page's active row.
        assert.match((await page.locator(".status-line").textContent()) ?? "", /Adapter ckpt-2/);
      });
    }
  }
});
