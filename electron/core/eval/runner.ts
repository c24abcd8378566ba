import fs from "node:fs";
import path from "node:path";
import type { EngineOptions } from "../inference/engine.js";
import type { EvalCore, StartEvalCore } from "./inProcessCore.js";
import { CoreClient, type Answer, type GenerateOptions } from "./client.js";
import { EVAL_METHODS, writeReport, type EvalMethod, type EvalPoint, type EvalReport, type MethodRun } from "./report.js";
import { makeScorer, reactionFor, type AnswerScorer } from "./rules.js";
import { renderPrompt, type Scenario } from "./scenario.js";
import { exportSamples } from "./samplesExport.js";
import { FluencyMeter } from "./fluency.js";
import { formatInterval, gainInterval, scoreInterval } from "./stats.js";

export interface EvalRunOptions {
  scenario: Scenario;
  scenarioFile: string;
  /** GGUF path (in-process) or a label (with `url`) */
  model: string;
  methods: EvalMethod[];
  interactions: number;
  /** how many of the scenario's seeds to use (more are derived when it has fewer) */
  seedCount?: number;
  /**
   * Seed of the training interactions' sampling (default 0): another value gives the run another
   * course (other answers, feedback and batches) with the same held-out scoring, for a second
   * sample of a learning curve.
   */
  trainSeed?: number;
  outDir: string;
  /** an already running core; then only methods[0] runs there, and the baseline is its first scoring */
  url?: string;
  token?: string;
  /** in-process core's engine settings (threads, context, backend) */
  engine?: { threads?: number; maxContextSize?: number; sequences?: number; backend?: EngineOptions["backend"] };
  /** longest wait for the learning loop to settle before a scoring (default 30 min) */
  settleTimeoutMs?: number;
  log?: (line: string) => void;
  /** for tests: a scorer other than the scenario's */
  scorer?: AnswerScorer;
  /** starts the in-process cores (core.ts startCore); needed when no `url` is given */
  startCore?: StartEvalCore;
}

const BOOT = { level: 0.95, resamples: 2000, seed: 12345 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function seedList(s: Scenario, count?: number): number[] {
  const n = count ?? s.seeds.length;
  const out = s.seeds.slice(0, n);
  for (let i = out.length; i < n; i++) out.push(1000 + i);
  return out;
}

/** Runs a scenario: a baseline and each method, writes DIR/report.json and DIR/chart.svg. */
export async function runEval(opts: EvalRunOptions): Promise<EvalReport> {
  let o = opts;
  const log = o.log ?? (() => {});
  const t0 = performance.now();
  const s = o.scenario;
  const seeds = seedList(s, o.seedCount);
  // Absolute: the report and the replay commands name files under it.
  o = { ...o, outDir: path.resolve(o.outDir) };
  const evalEvery = s.evalEvery ?? s.training.batchSize;
  const scorer = o.scorer ?? makeScorer(s);
  fs.mkdirSync(o.outDir, { recursive: true });
  const report: EvalReport = {
    version: 1,
    scenario: { name: s.name, file: path.resolve(o.scenarioFile) },
    model: o.url ? o.model : path.resolve(o.model),
    mode: o.url ? "url" : "in-process",
    createdAt: new Date().toISOString(),
    interactions: o.interactions,
    evalEvery,
    seeds,
    samplesPerPrompt: s.samplesPerPrompt,
    heldOutPrompts: s.heldOutPrompts.length,
    ci: { method: "bootstrap-prompts", level: BOOT.level, resamples: BOOT.resamples, unit: "held-out prompt (its samples × seeds averaged)" },
    runs: [],
    timings: { totalSeconds: 0 },
    chart: "chart.svg",
  };
  const save = () => {
    report.timings.totalSeconds = (performance.now() - t0) / 1000;
    writeReport(o.outDir, report);
  };

  if (o.url) {
    if (!o.token) throw new Error("--url needs --token");
    const client = new CoreClient(o.url.replace(/\/+$/, ""), o.token);
    const run = await runMethod(client, null, o.methods[0], { o, seeds, evalEvery, scorer, log, baseline: null, fluency: null });
    // Against a running core there is no separate untouched copy: its first scoring is the baseline.
    const base: MethodRun = { ...emptyRun("baseline"), points: [run.points[0]], notes: ["the served adapter before the run's first interaction (--url mode)"] };
    finishGain(run, base);
    report.runs.push(base, run);
    save();
    return report;
  }

  const startCore = o.startCore;
  if (!startCore) throw new Error("runEval: an in-process run needs `startCore` (core.ts startCore), or `url` for a running core");
  // The baseline: the model without learning, scored once (fixed seeds: it would score the same at every point).
  const baseDir = path.join(o.outDir, "runs", "baseline");
  fs.rmSync(baseDir, { recursive: true, force: true });
  const tb = performance.now();
  // It stays up for the whole run: it also measures how natural every later answer still reads.
  const baseCore = await startCore({ model: o.model, dataDir: path.join(baseDir, "data"), uiDir: "", engine: engineOpts(o), training: false });
  try {
    const baseClient = new CoreClient(baseCore.url, baseCore.token);
    const fluency = s.template.kind === "completion" ? new FluencyMeter(baseClient) : null;
    const basePoint = await scoreHeldOut(baseClient, s, seeds, scorer, 0, "baseline", log, fluency);
    const base: MethodRun = {
      ...emptyRun("baseline"),
      points: [basePoint],
      dataDir: path.join(baseDir, "data"),
      seconds: (performance.now() - tb) / 1000,
      notes: ["no learning: the base model with the same prompts and seeds; scored once, since nothing changes between points"],
    };
    if (!fluency) base.notes.push("fluency is measured for plain-completion scenarios only");
    report.runs.push(base);
    save();

    for (const method of o.methods) {
      const dir = path.join(o.outDir, "runs", method);
      fs.rmSync(dir, { recursive: true, force: true });
      const core = await startCore({
        model: o.model,
        dataDir: path.join(dir, "data"),
        uiDir: "",
        engine: engineOpts(o),
        training: { ...(s.training.stepsPerRun !== undefined ? { stepsPerRun: s.training.stepsPerRun } : {}), gate: gateOverrides(s) },
      });
      try {
        const client = new CoreClient(core.url, core.token);
        const run = await runMethod(client, core, method, { o, seeds, evalEvery, scorer, log, baseline: basePoint, fluency });
        run.dataDir = core.paths.root;
        finishGain(run, base);
        report.runs.push(run);
        save();
      } finally {
        await core.close();
      }
    }
  } finally {
    await baseCore.close();
  }
  save();
  return report;
}

function engineOpts(o: EvalRunOptions) {
  return {
    threads: o.engine?.threads,
    maxContextSize: o.engine?.maxContextSize ?? 512,
    sequences: o.engine?.sequences ?? 2,
    ...(o.engine?.backend ? { backend: o.engine.backend } : {}),
  };
}

function emptyRun(method: MethodRun["method"]): MethodRun {
  return {
    method,
    points: [],
    gain: null,
    firstGainBeyondCi: null,
    bestGain: null,
    adaptersServed: [],
    checkpoints: [],
    finalAdapter: null,
    reactions: { up: 0, down: 0, hint: 0, next: 0, none: 0 },
    logPath: null,
    dataDir: null,
    samplesPath: null,
    replay: [],
    notes: [],
    seconds: 0,
  };
}

function finishGain(run: MethodRun, base: MethodRun): void {
  const b = base.points[0];
  if (!b || run.points.length === 0) return;
  for (const p of run.points) {
    const g = gainInterval(
      p.promptMeans.map((x) => [x]),
      b.promptMeans.map((x) => [x]),
      BOOT,
    );
    p.gain = { ...g, significant: g.lo > 0 || g.hi < 0 };
  }
  run.gain = run.points[run.points.length - 1].gain ?? null;
  run.firstGainBeyondCi = run.points.find((p) => p.gain && p.gain.lo > 0)?.interactions ?? null;
  const best = run.points.reduce((x, y) => ((y.gain?.mean ?? -Infinity) > (x.gain?.mean ?? -Infinity) ? y : x));
  run.bestGain = best.gain ? { interactions: best.interactions, mean: best.gain.mean, lo: best.gain.lo, hi: best.gain.hi } : null;
}

async function generate(client: CoreClient, r: ReturnType<typeof renderPrompt>, o: GenerateOptions): Promise<Answer> {
  return r.kind === "completion" ? client.complete(r.prompt, o) : client.chat(r.messages, o);
}

/** Scores every held-out prompt × sample × seed with the adapter being served now. */
export async function scoreHeldOut(
  client: CoreClient,
  s: Scenario,
  seeds: number[],
  scorer: AnswerScorer,
  interactions: number,
  label: string,
  log: (l: string) => void,
  fluency: FluencyMeter | null = null,
): Promise<EvalPoint> {
  const t = performance.now();
  const rows: number[][] = [];
  const adapters = new Set<string>();
  const examples: NonNullable<EvalPoint["examples"]> = [];
  for (const [pi, prompt] of s.heldOutPrompts.entries()) {
    const row: number[] = [];
    const r = renderPrompt(s, prompt);
    for (const seed of seeds) {
      for (let k = 0; k < s.samplesPerPrompt; k++) {
        const a = await generate(client, r, {
          seed: seed * 100_003 + pi * 101 + k,
          maxTokens: s.generation.maxTokens,
          temperature: s.generation.temperature,
          turnType: "side",
          sessionId: `eval-${label}-${interactions}-${pi}-${seed}-${k}`,
          sessionDone: true,
        });
        adapters.add(a.adapter);
        const sc = await scorer(prompt, a.text);
        row.push(sc);
        if (row.length === 1) examples.push({ prompt, text: a.text, score: sc });
        if (fluency && r.kind === "completion") await fluency.add(r.prompt, a.text);
      }
    }
    rows.push(row);
  }
  const score = scoreInterval(rows, BOOT);
  const fl = fluency?.take() ?? null;
  log(
    `${label} @ ${interactions}: score ${formatInterval(score)}${fl ? `, fluency ${fl.meanLogprob.toFixed(3)} nats/token` : ""} (adapter ${[...adapters].join(", ")})`,
  );
  return {
    interactions,
    score,
    promptMeans: rows.map((r) => r.reduce((a, b) => a + b, 0) / r.length),
    adapters: [...adapters],
    fluency: fl,
    examples,
    seconds: (performance.now() - t) / 1000,
  };
}

interface MethodCtx {
  o: EvalRunOptions;
  seeds: number[];
  evalEvery: number;
  scorer: AnswerScorer;
  log: (l: string) => void;
  baseline: EvalPoint | null;
  fluency: FluencyMeter | null;
}

async function runMethod(client: CoreClient, core: EvalCore | null, method: EvalMethod, c: MethodCtx): Promise<MethodRun> {
  const t = performance.now();
  const s = c.o.scenario;
  const run = emptyRun(method);
  const ckpts0 = await client.checkpoints();
  if (ckpts0 === null) run.notes.push("this core has no learning loop (/api/checkpoints is missing): scores cannot change");
  await client.patchSettings({
    learningMethod: method,
    autoLearn: true,
    batchSize: s.training.batchSize,
    ...(s.training.loraRank !== undefined ? { loraRank: s.training.loraRank } : {}),
    ...(s.training.loraAlpha !== undefined ? { loraAlpha: s.training.loraAlpha } : {}),
    ...(s.training.learningRate !== undefined ? { learningRate: s.training.learningRate } : {}),
    ...(s.training.teacherSource !== undefined ? { teacherSource: s.training.teacherSource } : {}),
    ...(s.training.klBeta !== undefined ? { klBeta: s.training.klBeta } : {}),
    preferencesInPrompt: s.preferences,
  });
  // The first point: the untouched model, already measured by the baseline (same model, prompts, seeds).
  run.points.push(c.baseline ? { ...c.baseline } : await scoreHeldOut(client, s, c.seeds, c.scorer, 0, method, c.log, c.fluency));
  const served = new Map<string, { firstInteraction: number; answers: number }>();
  // Immediate effect of a hint (scenarios with preferences): the next turn with and without the block.
  let hintPending = false;
  const afterHint: { with: number[]; without: number[] } = { with: [], without: [] };
  for (let i = 1; i <= c.o.interactions; i++) {
    const prompt = s.trainPrompts[(i - 1) % s.trainPrompts.length];
    const sessionId = `eval-${method}-train-${i}`;
    const r = renderPrompt(s, prompt);
    const a = await generate(client, r, {
      seed: 7_000_000 + (c.o.trainSeed ?? 0) * 100_003 + i,
      maxTokens: s.generation.maxTokens,
      temperature: s.generation.temperature,
      turnType: "main",
      sessionId,
    });
    const sv = served.get(a.adapter) ?? { firstInteraction: i, answers: 0 };
    sv.answers++;
    served.set(a.adapter, sv);
    if (hintPending) {
      hintPending = false;
      const without = await generate(client, r, {
        seed: 7_000_000 + (c.o.trainSeed ?? 0) * 100_003 + i,
        maxTokens: s.generation.maxTokens,
        temperature: s.generation.temperature,
        turnType: "side",
        sessionId: `${sessionId}-no-preferences`,
        sessionDone: true,
      });
      afterHint.with.push(await c.scorer(prompt, a.text));
      afterHint.without.push(await c.scorer(prompt, without.text));
    }
    const react = reactionFor(s, a.text);
    if (!react) run.reactions.none++;
    else {
      if (react.thumbs === "up") run.reactions.up++;
      if (react.thumbs === "down") run.reactions.down++;
      if (react.hint) {
        run.reactions.hint++;
        hintPending = s.preferences;
      }
      if (react.thumbs || react.hint) await client.feedback(a.turnId, react.thumbs, react.hint);
      if (react.next) {
        run.reactions.next++;
        // The user's next message in the same session: the judge reads it as the turn's next state.
        const history = r.kind === "chat" ? r.messages : [{ role: "user", content: r.prompt }];
        await client.chat([...history, { role: "assistant", content: a.text }, { role: "user", content: react.next }], {
          seed: 1,
          maxTokens: 1,
          temperature: s.generation.temperature,
          turnType: "main",
          sessionId,
          sessionDone: true,
        });
      }
    }
    const scoring = i % c.evalEvery === 0 || i === c.o.interactions;
    // The simulated user waits for the learning loop whenever a run is due or in progress (a
    // person types slower than a batch trains): which adapter answers the next prompt then
    // depends on the interactions alone, not on timing, so a run is reproducible. Not only
    // every batchSize interactions: held-back turns are never trained on, so a batch fills
    // at other interactions (before, a loaded machine served the next prompts with the older
    // adapter and the run took another course).
    const boundary = scoring || i % s.training.batchSize === 0;
    await settle(client, s.training.batchSize, c.o.settleTimeoutMs ?? 30 * 60_000, c.log, boundary ? 3 : 1);
    if (scoring) run.points.push(await scoreHeldOut(client, s, c.seeds, c.scorer, i, method, c.log, c.fluency));
  }
  if (s.preferences) {
    const one = (xs: number[]) => xs.map((x) => [x]);
    const g = afterHint.with.length ? gainInterval(one(afterHint.with), one(afterHint.without), BOOT) : null;
    run.afterHint = g
      ? {
          turns: afterHint.with.length,
          withBlock: scoreInterval(one(afterHint.with), BOOT),
          without: scoreInterval(one(afterHint.without), BOOT),
          gain: { ...g, significant: g.lo > 0 || g.hi < 0 },
        }
      : null;
    if (run.afterHint)
      c.log(
        `${method}: the turn after a hint (${run.afterHint.turns}): ${formatInterval(run.afterHint.withBlock)} with its preference in the prompt, ${formatInterval(run.afterHint.without)} without; gain ${formatInterval(run.afterHint.gain, true)}`,
      );
    run.notes.push("held-out scores are side turns: no preference block, what the weights learned");
  }
  run.adaptersServed = [...served.entries()].map(([version, v]) => ({ version, ...v })).sort((x, y) => x.firstInteraction - y.firstInteraction);
  const ckpts = (await client.checkpoints()) ?? [];
  run.checkpoints = ckpts
    .map((k) => ({ n: k.n, version: k.version, parent: k.parent, verdict: k.verdict, samples: k.samples, kl: k.kl, loss: k.loss, reasons: k.gate.reasons }))
    .sort((x, y) => x.n - y.n);
  run.finalAdapter = (await client.status()).adapter ?? null;
  if (core) {
    run.logPath = core.paths.trajectories;
    const exp = exportSamples(core, ckpts, path.join(c.o.outDir, "runs", method), c.o.model, method);
    run.samplesPath = exp.samplesPath;
    run.replay = exp.replay;
    run.notes.push(...exp.notes);
  } else run.notes.push("--url mode: samples are not exported; `clawrl export` on that core's data dir has the log");
  run.seconds = (performance.now() - t) / 1000;
  return run;
}

/** The publish gate's options the scenario sets (the app's defaults for the rest). */
function gateOverrides(s: Scenario): { klBound?: number; fluencyMargin?: number } {
  const { klBound, fluencyMargin } = s.training;
  return { ...(klBound !== undefined ? { klBound } : {}), ...(fluencyMargin !== undefined ? { fluencyMargin } : {}) };
}

/** Waits until the judge queue is empty and no training run is in progress or due. */
async function settle(client: CoreClient, batchSize: number, timeoutMs: number, log: (l: string) => void, calmPolls = 3): Promise<void> {
  const t0 = Date.now();
  let calm = 0;
  for (;;) {
    const tr = (await client.status()).training;
    if (!tr || tr.state === undefined) return; // no learning loop
    const quiet = (tr.judgeQueue ?? 0) === 0 && (tr.state === "idle" || tr.state === "error" || tr.state === "paused");
    const due = (tr.samplesWaiting ?? 0) >= batchSize;
    // A run that is due starts within a moment; a due batch that stays idle (a blocked run) is let go after a while.
    calm = quiet ? calm + 1 : 0;
    if (quiet && (!due ? calm >= calmPolls : calm >= 20)) {
      if (due) log(`training stayed idle with ${tr.samplesWaiting} samples waiting${tr.lastError ? ` (${tr.lastError})` : ""}`);
      return;
    }
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`the learning loop did not settle within ${Math.round(timeoutMs / 1000)} s (state ${tr.state}, ${tr.samplesWaiting} samples waiting)`);
    await sleep(300);
  }
}

export { EVAL_METHODS };
