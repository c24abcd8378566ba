import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { studentTCdf, studentTQuantile } from "../../common/stats/studentT.js";

const close = (a: number, b: number, tol: number, what: string) => assert.ok(Math.abs(a - b) < tol, `${what}: ${a} vs ${b}`);

describe("Student's t (common/stats/studentT.ts)", () => {
  it("its CDF matches the table", () => {
    close(studentTCdf(-2, 10), 0.036694, 1e-5, "t=-2, df=10");
    close(studentTCdf(-1.812461, 10), 0.05, 1e-5, "t_0.05, df=10");
    close(studentTCdf(-2.763769, 10), 0.01, 1e-5, "t_0.01, df=10");
    close(studentTCdf(-2.326348, 1e6), 0.01, 1e-4, "normal limit");
    close(studentTCdf(0, 3), 0.5, 1e-12, "centre");
    close(studentTCdf(1.5, 4.5) + studentTCdf(-1.5, 4.5), 1, 1e-12, "symmetry");
  });

  it("its quantile matches the table and inverts the CDF", () => {
    // One-sided critical values (scipy.stats.t.ppf).
    close(studentTQuantile(0.95, 7), 1.894579, 1e-6, "t_0.95, df=7");
    close(studentTQuantile(0.95, 15), 1.75305, 1e-6, "t_0.95, df=15");
    close(studentTQuantile(0.99, 10), 2.763769, 1e-6, "t_0.99, df=10");
    close(studentTQuantile(0.05, 7), -1.894579, 1e-6, "lower tail");
    close(studentTQuantile(0.5, 3), 0, 1e-7, "centre");
    for (const [p, df] of [
      [0.001, 2],
      [0.3, 5.5],
      [0.975, 31],
    ])
      close(studentTCdf(studentTQuantile(p, df), df), p, 1e-9, `cdf(quantile(${p}, ${df}))`);
    assert.throws(() => studentTQuantile(1, 5), /0 < p < 1/);
    assert.throws(() => studentTQuantile(0.5, 0), /df > 0/);
  });
});
