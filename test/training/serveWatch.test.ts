import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { clearlyWorse, WATCH_DEFAULTS, watchVerdict, welchLower } from "../../electron/core/training/serveWatch.js";

const close = (a: number, b: number, tol: number, what: string) => assert.ok(Math.abs(a - b) < tol, `${what}: ${a} vs ${b}`);

describe("watch statistics", () => {
  it("Welch's one-sided test: the child's mean lower than the parent's", () => {
    // Means 20.82 vs 22.99: t = −2.4554, df = 24.99, one-sided p = 0.01069 (scipy.stats.t.cdf).
    const a = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4];
    const b = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4];
    const c = welchLower(a, b);
    close(c.t!, -2.4554, 1e-4, "t");
    close(c.df!, 24.9885, 1e-3, "df");
    close(c.p!, 0.010689, 1e-5, "p");
    // No spread: an exact difference.
    assert.equal(welchLower([-1, -1, -1], [1, 1, 1]).p, 0);
    assert.equal(welchLower([1, 1], [1, 1]).p, 1);
    assert.equal(welchLower([1], [1, 1]).p, null, "too few values");
  });

  it("'clearly worse' needs 8 values a side, a drop of 0.25 reward (0.5 nats/token fluency) and p < 0.01", () => {
    const up = (n: number) => Array.from({ length: n }, (_, i) => (i % 4 === 3 ? 0 : 1)); // mean 0.75
    const down = (n: number) => Array.from({ length: n }, (_, i) => (i % 4 === 3 ? 0 : -1)); // mean −0.75
    const fires = (child: number[], parent: number[]) => clearlyWorse(welchLower(child, parent), WATCH_DEFAULTS.minRewardDrop, WATCH_DEFAULTS);
    assert.equal(fires(down(8), up(8)), true);
    assert.equal(fires(down(7), up(20)), false, "7 rated turns are not enough");
    assert.equal(fires(up(8), down(8)), false, "better is not worse");
    // Worse by a little, very surely: not enough of a drop.
    const parent = Array.from({ length: 20 }, () => 0.5);
    const child = Array.from({ length: 20 }, (_, i) => (i % 2 ? 0.3 : 0.32));
    assert.equal(fires(child, parent), false);
    // Worse by a lot, but noisy: not sure enough.
    assert.equal(fires([1, -1, 1, -1, -1, 1, -1, 0], [1, -1, 1, 1, -1, 1, 1, 0]), false);

    const f = watchVerdict(welchLower(down(10), up(12)), null, WATCH_DEFAULTS, "checkpoint 3");
    assert.equal(f?.rule, "reward");
    assert.match(
      f.reason,
      /^its answers were rated worse than checkpoint 3's: mean reward −0\.80 over its last 10 rated turns vs \+0\.75 over 12 \(one-sided Welch t-test p < 0\.0001 < 0\.01, drop ≥ 0\.25\)$/,
    );
    const fl = watchVerdict(
      welchLower([], []),
      welchLower([-3.1, -2.9, -3.4, -3.0, -2.8, -3.3, -3.2, -2.7], [-1.5, -1.4, -1.6, -1.3, -1.5, -1.7, -1.4, -1.6]),
      WATCH_DEFAULTS,
      "the base model",
    );
    assert.equal(fl?.rule, "fluency");
    assert.match(fl.reason, /^its answers read worse to the base model than the base model's: -3\.05 vs -1\.50 nats\/token over 8 and 8 answers/);
    assert.equal(watchVerdict(welchLower(up(10), up(10)), null), null);
  });
});
