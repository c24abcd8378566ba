/** The native addon (trainer/native/gemm.ts) in the tests of its kernels. */
import assert from "node:assert/strict";
import { nativeGemmStatus, type NativeGemm } from "../../trainer/native/gemm.js";

/** npm install builds the addon (scripts/build-native.mjs); only an explicit opt-out skips its tests. */
export const skipWithoutNative = { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" };

/** The loaded addon; fails the test, saying why, where it did not load. */
export function loadedNative(): NativeGemm {
  const s = nativeGemmStatus();
  assert.ok(s.loaded, `the native addon did not load: ${s.loaded ? "" : s.why}`);
  return s.gemm;
}

/** Puts the addon back on all its threads (after a test that set them). */
export function restoreNativeThreads(): void {
  const s = nativeGemmStatus();
  if (s.loaded) s.gemm.setThreads(s.gemm.hardwareThreads);
}

/** Largest |x − ref| over the largest |ref|: an error relative to the result's own scale. */
export function errorToScale(x: Float32Array, ref: Float64Array): number {
  let d = 0;
  let scale = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(x[i] - ref[i]));
    scale = Math.max(scale, Math.abs(ref[i]));
  }
  return d / scale;
}
