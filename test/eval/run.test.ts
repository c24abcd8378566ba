import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import type { EvalReport } from "../../electron/core/eval/report.js";
import { parseSamplesJsonl } from "../../models/samples/sample.js";
import { repoRoot, runCliAsync, storiesModelPath, tempDir } from "../helpers/cli.js";

const stories = storiesModelPath();

describe("/v1/completions: a plain prompt, no chat template", () => {
  let core: RunningCore;
  before(async () => {
    core = await startCore({
      model: stories,
      dataDir: tempDir("clawrl-cmpl-"),
      token: "t",
      uiDir: "",
      training: false,
      engine: { maxContextSize: 256, sequences: 1, threads: 1, backend: "cpu" },
    });
  });
  after(async () => {
    await core?.close();
  });
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${core.url}/v1/completions`, {
      method: "POST",
      headers: { authorization: "Bearer t", "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  it("tokenizes the prompt as is (BOS + text) and records a turn with the served tokens", async () => {
    const prompt = "Once upon a time, there was a cat.";
    const res = await post({ prompt, max_tokens: 8, seed: 3, temperature: 1 }, { "x-turn-type": "main", "x-session-id": "s1" });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { object: string; choices: Array<{ text: string }>; usage: { prompt_tokens: number; completion_tokens: number } };
    assert.equal(body.object, "text_completion");
    const expected = core.engine!.model.tokenize(prompt, false).length + (core.engine!.model.tokens.shouldPrependBosToken ? 1 : 0);
    assert.equal(body.usage.prompt_tokens, expected, "no template tokens around the prompt");
    assert.ok(body.usage.completion_tokens > 0 && body.usage.completion_tokens <= 8);
    assert.equal(res.headers.get("x-clawrl-adapter"), "base");
    const turnId = res.headers.get("x-clawrl-turn-id")!;
    const t = core.store.readTurn(turnId);
    assert.equal(t.promptTokens.length, expected);
    // The text continues the prompt: with the space its first token carries after the prompt.
    assert.equal(core.engine!.model.detokenize(t.responseTokens as never, false, t.promptTokens as never), body.choices[0].text);
    assert.match(body.choices[0].text, /^\s/, "stories260K's answers start a new word after 'cat.'");
    assert.equal(t.tokenLogprobs.length, t.responseTokens.length);
    assert.equal(t.format, "completion", "the turn says its prompt is plain text: the OPD teacher must not wrap it in a chat template");
    // Same seed, same answer: sampling is seeded.
    const again = (await (await post({ prompt, max_tokens: 8, seed: 3, temperature: 1 })).json()) as { choices: Array<{ text: string }> };
    assert.equal(again.choices[0].text, body.choices[0].text);
  });

  it("logprobs of generated tokens; echo + max_tokens 0 scores a text with the same numbers and records no turn", async () => {
    const prompt = "Once upon a time, there was a dog.";
    const gen = (await (await post({ prompt, max_tokens: 12, seed: 5, temperature: 1, logprobs: 2 })).json()) as {
      choices: Array<{
        text: string;
        logprobs: { tokens: string[]; token_logprobs: number[]; top_logprobs: Array<Record<string, number>>; text_offset: number[] };
      }>;
    };
    const g = gen.choices[0].logprobs;
    assert.equal(g.tokens.join(""), gen.choices[0].text);
    assert.equal(g.token_logprobs.length, g.tokens.length);
    assert.ok(g.token_logprobs.every((x) => x <= 0 && Number.isFinite(x)));
    assert.ok(g.top_logprobs.every((t) => Object.keys(t).length >= 1 && Object.keys(t).length <= 2));
    assert.deepEqual(g.text_offset.slice(0, 2), [0, g.tokens[0].length]);

    const turnsBefore = [...core.store.turnEntries()].length;
    const res = await post({ prompt: prompt + gen.choices[0].text, max_tokens: 0, echo: true, logprobs: 0 });
    assert.equal(res.status, 200);
    const s = (await res.json()) as {
      choices: Array<{ text: string; logprobs: { tokens: string[]; token_logprobs: Array<number | null> } }>;
      usage: { completion_tokens: number };
    };
    assert.equal(s.choices[0].text, prompt + gen.choices[0].text);
    assert.equal(s.usage.completion_tokens, 0);
    const lp = s.choices[0].logprobs.token_logprobs;
    assert.equal(typeof lp[0], "number", "stories260K prepends BOS: the first text token is scored given it");
    assert.equal(s.choices[0].logprobs.tokens.join(""), prompt + gen.choices[0].text);
    // The generated tokens re-tokenize the same way here: their scores match what generation reported.
    const tail = lp.slice(lp.length - g.token_logprobs.length) as number[];
    for (const [i, x] of tail.entries()) assert.ok(Math.abs(x - g.token_logprobs[i]) < 1e-3, `token ${i}: scored ${x}, generated ${g.token_logprobs[i]}`);
    assert.equal([...core.store.turnEntries()].length, turnsBefore, "scoring is not a turn");
  });

  it("refuses echo with generation and max_tokens 0 without echo", async () => {
    for (const body of [
      { prompt: "a", echo: true, max_tokens: 4 },
      { prompt: "a", max_tokens: 0 },
    ]) {
      const res = await post(body);
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: { message: string } }).error.message, /echo|max_tokens/);
    }
  });

  it("refuses a request without a prompt it can read", async () => {
    const res = await post({ prompt: { text: "a" } });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /prompt/);
  });
});

/**
 * A short real run: stories260K, the animals scenario cut down (4 interactions = one batch, few
 * held-out samples), the combined method, the real learning loop (trainer process, gate,
 * hot-swap). Checks the report's structure and adapter versions, the exported samples, and that
 * replaying them with `clawrl train` reproduces the final adapter byte for byte.
 */
describe("clawrl eval: a short real run on stories260K", () => {
  const dir = tempDir("clawrl-eval-run-");
  const out = path.join(dir, "out");
  const appData = path.join(dir, "app");
  let report: EvalReport;

  before(async () => {
    const base = JSON.parse(fs.readFileSync(path.join(repoRoot, "eval", "scenarios", "stories-animals.json"), "utf8"));
    // This run checks the report and the replay, not the gate: the fluency check of one batch
    // (a few sampled answers to 4 prompts) is mostly sampling noise, and CPUs that round
    // differently sample other answers, so its margin is opened here (test/training/gate*.ts test it).
    const scenario = {
      ...base,
      heldOutPrompts: base.heldOutPrompts.slice(0, 3),
      samplesPerPrompt: 2,
      seeds: [1],
      generation: { maxTokens: 32, temperature: 1 },
      training: { ...base.training, fluencyMargin: 5 },
    };
    const file = path.join(dir, "scenario.json");
    fs.writeFileSync(file, JSON.stringify(scenario));
    const r = await runCliAsync(
      ["eval", "--scenario", file, "--model", stories, "--out", out, "--interactions", "4", "--threads", "1", "--data-dir", appData],
      { CLAWRL_THREADS: "1" },
      540_000,
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /combined\s+score [\d.]+ \[[\d.]+, [\d.]+\] after 4 interactions/);
    report = JSON.parse(fs.readFileSync(path.join(out, "report.json"), "utf8")) as EvalReport;
  });

  it("writes a report: baseline and method, scores with intervals, the CI method, timings", () => {
    assert.equal(report.version, 1);
    assert.equal(report.mode, "in-process");
    assert.deepEqual(
      report.runs.map((r) => r.method),
      ["baseline", "combined"],
    );
    assert.equal(report.ci.method, "bootstrap-prompts");
    assert.deepEqual(report.seeds, [1]);
    const [base, run] = report.runs;
    assert.equal(base.points.length, 1);
    assert.deepEqual(
      run.points.map((p) => p.interactions),
      [0, 4],
    );
    for (const p of [...base.points, ...run.points]) {
      assert.equal(p.promptMeans.length, 3);
      assert.ok(p.score.lo <= p.score.mean && p.score.mean <= p.score.hi && p.score.lo >= 0 && p.score.hi <= 1, JSON.stringify(p.score));
      // Fluency: the base model's log-prob of the answers, per token; 3 prompts × 2 samples of up to 32 tokens.
      assert.ok(p.fluency && p.fluency.meanLogprob < 0 && p.fluency.meanLogprob > -10, JSON.stringify(p.fluency));
      assert.ok(p.fluency.tokens > 6 && p.fluency.tokens <= 3 * 2 * 32, String(p.fluency.tokens));
      assert.equal(p.examples?.length, 3);
      assert.deepEqual(
        p.examples.map((e) => e.prompt),
        base.points[0].examples!.map((e) => e.prompt),
      );
    }
    // Fluency re-scores the answers with the base model; the baseline's answers were sampled from
    // it, so it must equal the log-probs they were served with (end-of-text tokens aside: no text).
    const served = fs
      .readFileSync(path.join(base.dataDir!, "logs", "trajectories.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { kind: string; type?: string; finishReason?: string; tokenLogprobs?: number[] })
      .filter((r) => r.kind === "turn" && r.type === "side")
      .flatMap((r) => (r.finishReason === "stop" ? r.tokenLogprobs!.slice(0, -1) : r.tokenLogprobs!));
    assert.equal(base.points[0].fluency!.tokens, served.length);
    const servedMean = served.reduce((a, b) => a + b, 0) / served.length;
    assert.ok(Math.abs(base.points[0].fluency!.meanLogprob - servedMean) < 1e-3, `fluency ${base.points[0].fluency!.meanLogprob}, served ${servedMean}`);
    assert.ok(run.gain !== null);
    assert.ok(Math.abs(run.gain.mean - (run.points[1].score.mean - base.points[0].score.mean)) < 1e-9, "gain = final − baseline");
    assert.deepEqual(
      run.points.map((p) => p.gain?.mean),
      [0, run.gain.mean],
      "a gain at every point; none at the start",
    );
    assert.equal(run.firstGainBeyondCi, run.gain.lo > 0 ? 4 : null);
    assert.ok(report.timings.totalSeconds > 0 && run.seconds > 0);
    assert.equal(run.reactions.up + run.reactions.down, 4, "every story got a thumb");
    const svg = fs.readFileSync(path.join(out, "chart.svg"), "utf8");
    assert.match(svg, /^<svg /);
    assert.match(svg, /data-name="combined"/);
    assert.match(svg, /data-name="baseline \(no learning\)"/);
  });

  it("names the adapter versions: base answered the batch, the published checkpoint answered the held-out prompts after it", () => {
    const run = report.runs[1];
    assert.deepEqual(run.adaptersServed, [{ version: "base", firstInteraction: 1, answers: 4 }]);
    assert.deepEqual(run.points[0].adapters, ["base"]);
    assert.equal(run.checkpoints.length, 1);
    const c = run.checkpoints[0];
    assert.equal(c.samples, 4);
    if (c.verdict === "published") {
      assert.deepEqual(run.points[1].adapters, ["ckpt-1"]);
      assert.equal(run.finalAdapter, "ckpt-1");
    } else {
      assert.deepEqual(run.points[1].adapters, ["base"], `rejected: ${c.reasons.join("; ")}`);
    }
    assert.ok(run.logPath && fs.statSync(run.logPath).size > 0, "the run's JSONL log");
  });

  it("exports the trained samples and a replay that reproduces the final adapter", async () => {
    const run = report.runs[1];
    assert.ok(run.checkpoints[0].verdict === "published", `the scenario's gate lets the first batch through (${run.checkpoints[0].reasons.join("; ")})`);
    const samples = parseSamplesJsonl(fs.readFileSync(run.samplesPath!, "utf8"), run.samplesPath!);
    assert.equal(samples.length, 4);
    for (const { sample } of samples) {
      assert.ok(sample.prompt_tokens && sample.response_tokens && (sample.reward === 1 || sample.reward === -1));
      assert.equal(sample.format, "completion");
    }
    // Thumbs down came with the reader's hint: the replay covers the OPD term with the base-model teacher too.
    assert.ok(samples.some(({ sample }) => sample.hint === "The story should have animals in it, like a cat, a dog or a bird."));
    assert.equal(run.replay.length, 1);
    assert.match(run.replay[0], /--teacher base/);
    const argv = run.replay[0].split(" ").slice(2); // drop "clawrl train"
    const r = await runCliAsync(["train", ...argv], { CLAWRL_THREADS: "1" }, 300_000);
    assert.equal(r.code, 0, r.stderr);
    const outArg = argv[argv.indexOf("--out") + 1];
    const replayed = fs.readFileSync(path.join(outArg, "adapter.gguf"));
    const served = fs.readFileSync(path.join(run.dataDir!, "checkpoints", "1", "adapter.gguf"));
    assert.ok(replayed.equals(served), "the replayed adapter is byte-identical to the served checkpoint");
  });

  it("publishes the report for the app: GET /api/eval/latest", async () => {
    const core = await startCore({ dataDir: appData, token: "t", uiDir: "" });
    try {
      const res = await fetch(`${core.url}/api/eval/latest`, { headers: { authorization: "Bearer t" } });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { report: EvalReport; summary: { rows: Array<{ method: string; adapters: string[]; fluency: number | null }> } };
      assert.equal(body.report.createdAt, report.createdAt);
      assert.deepEqual(
        body.summary.rows.map((r) => r.method),
        ["baseline", "combined"],
      );
      assert.deepEqual(
        body.summary.rows.map((r) => r.fluency),
        report.runs.map((r) => r.points[r.points.length - 1].fluency!.meanLogprob),
      );
      const svg = await fetch(`${core.url}/api/eval/latest/chart.svg`, { headers: { authorization: "Bearer t" } });
      assert.equal(svg.status, 200);
      assert.match(svg.headers.get("content-type") ?? "", /image\/svg\+xml/);
    } finally {
      await core.close();
    }
  });
});

describe("GET /api/eval/latest without a report", () => {
  it("answers report null", async () => {
    const core = await startCore({ dataDir: tempDir("clawrl-eval-none-"), token: "t", uiDir: "" });
    try {
      const body = (await (await fetch(`${core.url}/api/eval/latest`, { headers: { authorization: "Bearer t" } })).json()) as { report: unknown };
      assert.equal(body.report, null);
      assert.equal((await fetch(`${core.url}/api/eval/latest/chart.svg`, { headers: { authorization: "Bearer t" } })).status, 404);
    } finally {
      await core.close();
    }
  });
});
