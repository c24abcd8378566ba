/**
 * The doctor's step estimate prices FLOPs at the backend's matMul peak, unless the measured step
 * ran faster than that peak (native products beside wasm): then at the rate it ran.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { batchSeconds, estimatingRate } from "../../electron/core/doctor/meaning.js";
import type { TrainRun } from "../../electron/core/api/doctorReport.js";
import { loadCatalog } from "../../models/catalog.js";
import { findShape } from "../../models/tiny/shapes.js";

const run = (gflops: number, stepSeconds: number): TrainRun => ({
  backend: "wasm",
  device: "wasm (simd, 2 threads)",
  shape: "qwen2.5-0.5b",
  batch: 1,
  context: 128,
  steps: 3,
  firstStepOnly: false,
  loadSeconds: 5,
  stepSeconds,
  trainedTokensPerStep: 128,
  trainedTokensPerSecond: 128 / stepSeconds,
  gflops,
  fractionOfPeak: null,
  placement: "host-f32/host-f32",
  peakRssBytes: 2 ** 31,
});

test("a step measured above the backend's matMul peak is priced at the rate it ran, not at the lower peak", () => {
  const entry = loadCatalog().find((e) => findShape(e.id))!;
  assert.ok(entry, "a catalog entry with a known shape");
  // Native products: 37.7 GFLOP/s measured beside a wasm peak of 33.3 (bench/trainer-real-size.ts, 20c4192).
  const native = run(37.7, 6.7);
  assert.equal(estimatingRate(33.3, native), 37.7);
  const atPeak = batchSeconds(entry, native, 33.3)!;
  const atRate = batchSeconds(entry, native, estimatingRate(33.3, native))!;
  assert.ok(atRate < atPeak, `${atRate} s vs ${atPeak} s`);
  assert.ok(Math.abs(atRate / atPeak - 33.3 / 37.7) < 1e-9, `no overhead left, the FLOPs at the measured rate: ${atRate} vs ${atPeak}`);
  // Below its peak (wasm alone), the peak stays the rate and the gap is counted as overhead.
  const wasm = run(13.9, 18.2);
  assert.equal(estimatingRate(39.2, wasm), 39.2);
  const noOverhead = run(39.2, (13.9 * 18.2) / 39.2); // the same FLOPs, run at the peak
  assert.ok(batchSeconds(entry, wasm, 39.2)! > batchSeconds(entry, noOverhead, 39.2)!, "the measured step's time beyond its FLOPs is counted");
  assert.equal(estimatingRate(null, null), 1);
});
