import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { bootstrapInterval, gainInterval, normalInterval, normalQuantile, quantileSorted, scoreInterval, sd } from "../../electron/core/eval/stats.js";
import { niceTicks, renderChart } from "../../electron/core/eval/chart.js";
import { writeReport, type EvalReport } from "../../electron/core/eval/report.js";
import { tempDir } from "../helpers/cli.js";

describe("eval confidence intervals", () => {
  it("normal quantile and normal interval on known data", () => {
    assert.ok(Math.abs(normalQuantile(0.975) - 1.959964) < 1e-5);
    assert.ok(Math.abs(normalQuantile(0.5)) < 1e-12);
    assert.ok(Math.abs(normalQuantile(0.005) + 2.5758293) < 1e-5);
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample sd √(32/7)
    const xs = [2, 4, 4, 4, 5, 5, 7, 9];
    assert.ok(Math.abs(sd(xs) - Math.sqrt(32 / 7)) < 1e-12);
    const ci = normalInterval(xs);
    const half = (1.959964 * Math.sqrt(32 / 7)) / Math.sqrt(8);
    assert.equal(ci.mean, 5);
    assert.ok(Math.abs(ci.lo - (5 - half)) < 1e-5 && Math.abs(ci.hi - (5 + half)) < 1e-5);
  });

  it("quantiles interpolate between order statistics", () => {
    assert.equal(quantileSorted([0, 10], 0.25), 2.5);
    assert.equal(quantileSorted([1, 2, 3, 4, 5], 0.5), 3);
  });

  it("bootstrap over prompts: zero width on constant data, close to the normal interval on large samples, reproducible", () => {
    const c = bootstrapInterval([0.5, 0.5, 0.5]);
    assert.deepEqual([c.lo, c.mean, c.hi], [0.5, 0.5, 0.5]);
    // 400 prompts: half score 0, half 1: mean 0.5, standard error ≈ 0.025, 95% half-width ≈ 0.049.
    const xs = Array.from({ length: 400 }, (_, i) => i % 2);
    const b = bootstrapInterval(xs, { resamples: 4000, seed: 7 });
    const n = normalInterval(xs);
    assert.equal(b.mean, 0.5);
    assert.ok(Math.abs(b.lo - n.lo) < 0.01 && Math.abs(b.hi - n.hi) < 0.01, `${b.lo}..${b.hi} vs ${n.lo}..${n.hi}`);
    assert.deepEqual(bootstrapInterval(xs, { resamples: 500, seed: 3 }), bootstrapInterval(xs, { resamples: 500, seed: 3 }));
    assert.equal(b.method, "bootstrap-prompts");
  });

  it("clusters samples by prompt and pairs gains by prompt", () => {
    // Two prompts: one always scores 1, the other 0. The interval is over 2 prompt means, not 8 answers.
    const rows = [
      [1, 1, 1, 1],
      [0, 0, 0, 0],
    ];
    const ci = scoreInterval(rows);
    assert.equal(ci.n, 2);
    assert.equal(ci.mean, 0.5);
    assert.ok(ci.lo === 0 && ci.hi === 1, `${ci.lo}..${ci.hi}`);
    // A uniform +0.25 gain on every prompt has no spread: the paired interval is exactly [0.25, 0.25].
    const base = [
      [0, 0.5],
      [0.25, 0.25],
      [1, 0],
    ];
    const after = base.map((r) => r.map((x) => x + 0.25));
    const g = gainInterval(after, base);
    assert.ok(Math.abs(g.lo - 0.25) < 1e-12 && Math.abs(g.hi - 0.25) < 1e-12);
    assert.throws(() => gainInterval([[1]], [[1], [0]]), /same prompts/);
  });
});

describe("eval chart and report", () => {
  it("draws one line, band and legend entry per series, baseline dashed", () => {
    const svg = renderChart(
      [
        { name: "baseline (no learning)", dashed: true, points: [{ x: 0, mean: 0.2, lo: 0.1, hi: 0.3 }] },
        {
          name: "combined",
          points: [
            { x: 0, mean: 0.2, lo: 0.1, hi: 0.3 },
            { x: 8, mean: 0.6, lo: 0.5, hi: 0.7 },
            { x: 16, mean: 0.8, lo: 0.7, hi: 0.9 },
          ],
        },
        { name: "a<b", points: [{ x: 0, mean: 0.1, lo: 0, hi: 0.2 }] },
      ],
      { title: "cats & dogs" },
    );
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /<\/svg>\n$/);
    assert.equal((svg.match(/<polyline class="line"/g) ?? []).length, 3);
    assert.equal((svg.match(/<polygon class="band"/g) ?? []).length, 3);
    assert.equal((svg.match(/stroke-dasharray/g) ?? []).length, 2, "baseline line and its legend entry");
    assert.match(svg, /cats &amp; dogs/);
    assert.match(svg, /a&lt;b/);
    // The combined line: x 0 → left edge (60), x 16 → right edge (720 − 170 = 550); y 0.2 → 40 + 0.8·330 = 304, y 0.8 → 106.
    assert.match(svg, /points="60,304 305,172 550,106"/);
    assert.deepEqual(niceTicks(0, 1, 5), [0, 0.2, 0.4, 0.6, 0.8, 1]);
    assert.deepEqual(niceTicks(0, 16, 6), [0, 5, 10, 15]);
  });

  it("writes report.json and chart.svg", () => {
    const dir = tempDir("clawrl-eval-report-");
    const iv = { mean: 0.5, lo: 0.4, hi: 0.6, level: 0.95, method: "bootstrap-prompts" as const, n: 3 };
    const report: EvalReport = {
      version: 1,
      scenario: { name: "s", file: "/s.json" },
      model: "/m.gguf",
      mode: "in-process",
      createdAt: new Date().toISOString(),
      interactions: 4,
      evalEvery: 4,
      seeds: [1],
      samplesPerPrompt: 1,
      heldOutPrompts: 3,
      ci: { method: "bootstrap-prompts", level: 0.95, resamples: 2000, unit: "prompt" },
      runs: [
        {
          method: "baseline",
          points: [{ interactions: 0, score: iv, promptMeans: [0.5, 0.5, 0.5], adapters: ["base"], seconds: 1 }],
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
          seconds: 1,
        },
      ],
      timings: { totalSeconds: 2 },
      chart: "chart.svg",
    };
    const r = writeReport(dir, report);
    assert.deepEqual(JSON.parse(fs.readFileSync(r.reportPath, "utf8")), report);
    assert.match(fs.readFileSync(path.join(dir, "chart.svg"), "utf8"), /baseline \(no learning\)/);
    assert.deepEqual(fs.readdirSync(dir).sort(), ["chart.svg", "report.json"], "no temp files left");
  });
});
