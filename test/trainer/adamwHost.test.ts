/**
 * AdamW's host loop (issue 31: one pass per parameter on the wasm and cpu backends, instead of
 * ~18 kernels) gives the tensor path's update: parameters, both moments and the gradient norm,
 * with and without clipping, over several steps; on the js cpu backend and on wasm (whose host
 * loop reads and writes the heap in place: trainer/wasm/heap.ts). Where the native addon is
 * built, its loop gives the JavaScript loop's bits exactly.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-cpu";
import { AdamW, setFusedAdamW, setNativeAdamW } from "../../trainer/optim/adamw.js";
import { nativeGemm } from "../../trainer/native/gemm.js";
import { initBackend } from "../../trainer/backend.js";

before(async () => {
  await tf.setBackend("cpu");
});
after(async () => {
  setFusedAdamW(true);
  setNativeAdamW(true);
  await tf.setBackend("cpu");
});

function pseudoRandom(seed: number, size: number, scale: number): Float32Array {
  const d = new Float32Array(size);
  let s = seed;
  for (let i = 0; i < size; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    d[i] = (s / 2147483648 - 0.5) * scale;
  }
  return d;
}

const shapes: Record<string, number[]> = { a: [7, 3], b: [3, 11], c: [5] };

async function run(
  host: boolean,
  gradScale: number,
  native = true,
): Promise<{ params: Float32Array[]; m: Float32Array[]; v: Float32Array[]; norms: number[] }> {
  setFusedAdamW(host);
  setNativeAdamW(native);
  const params = Object.fromEntries(Object.entries(shapes).map(([n, s], i) => [n, tf.variable(tf.tensor(pseudoRandom(7 + i, s[0] * (s[1] ?? 1), 1), s))]));
  const opt = new AdamW(params, { lr: 1e-2 });
  const norms: number[] = [];
  for (let t = 1; t <= 5; t++) {
    const g = Object.fromEntries(Object.entries(shapes).map(([n, s], i) => [n, tf.tensor(pseudoRandom(100 * t + i, s[0] * (s[1] ?? 1), gradScale), s)]));
    const info = opt.applyGradients(g);
    norms.push(info.gradNorm.dataSync()[0]);
    info.gradNorm.dispose();
    tf.dispose(Object.values(g));
  }
  const st = await opt.getState();
  const out = {
    params: Object.values(params).map((p) => Float32Array.from(p.dataSync() as Float32Array)),
    m: Object.keys(shapes).map((n) => st.m[n].data),
    v: Object.keys(shapes).map((n) => st.v[n].data),
    norms,
  };
  opt.dispose();
  tf.dispose(Object.values(params));
  return out;
}

for (const [what, gradScale, backend] of [
  ["below the clipping bound", 0.1, "cpu"],
  ["clipped (gradient norm over 1)", 10, "cpu"],
  ["on wasm, clipped", 10, "wasm"],
] as const) {
  test(`the host loop and the tensor path give the same update, ${what}`, async () => {
    if (backend === "wasm") await initBackend("wasm");
    else await tf.setBackend("cpu");
    assert.equal(tf.getBackend(), backend);
    const a = await run(false, gradScale);
    const b = await run(true, gradScale);
    const close = (x: Float32Array[], y: Float32Array[], tol: number, name: string) =>
      x.forEach((xs, j) =>
        xs.forEach((xv, i) => assert.ok(Math.abs(xv - y[j][i]) <= tol * Math.max(1, Math.abs(xv)), `${name}[${j}][${i}]: ${xv} vs ${y[j][i]}`)),
      );
    close(a.params, b.params, 1e-6, "parameter");
    close(a.m, b.m, 1e-6, "m");
    close(a.v, b.v, 1e-6, "v");
    a.norms.forEach((n, i) => assert.ok(Math.abs(n - b.norms[i]) <= 1e-5 * n, `norm ${n} vs ${b.norms[i]}`));
    if (gradScale > 1) assert.ok(a.norms[0] > 1, "the clipped case clips");
  });
}

for (const backend of ["cpu", "wasm"] as const) {
  test(
    `the native host loop gives the JavaScript loop's bits, on ${backend}`,
    { skip: nativeGemm()?.adamw ? false : "the native addon is not built" },
    async () => {
      // initBackend starts wasm once; after that it is set again by name.
      if (backend === "wasm" && !tf.findBackend("wasm")) await initBackend("wasm");
      await tf.setBackend(backend);
      assert.equal(tf.getBackend(), backend);
      for (const gradScale of [0.1, 10]) {
        const js = await run(true, gradScale, false);
        const native = await run(true, gradScale, true);
        assert.deepEqual(native.norms, js.norms);
        for (const k of ["params", "m", "v"] as const) js[k].forEach((x, j) => assert.deepEqual(native[k][j], x, `${k}[${j}] at scale ${gradScale}`));
        // Not the initial values: every parameter moved.
        assert.ok(native.params[0].some((x, i) => x !== pseudoRandom(7, 21, 1)[i]));
      }
    },
  );
}

test(
  "the native update refuses arrays of different lengths and outputs over inputs",
  { skip: nativeGemm()?.adamw ? false : "the native addon is not built" },
  () => {
    const g = nativeGemm()!;
    const a = () => new Float32Array(8);
    const k = [1, 0.9, 0.98, 1, 1e-4, 1, 1e-8] as const;
    assert.throws(() => g.adamw!(a(), a(), a(), a(), a(), a(), new Float32Array(7), ...k), /differ in length/);
    const shared = new Float32Array(16);
    const p = shared.subarray(0, 8);
    assert.throws(() => g.adamw!(a(), p, a(), a(), shared.subarray(4, 12), a(), a(), ...k), /overlaps an input/);
    assert.equal(g.sumSquares!(Float32Array.of(1, 2, 3), 0.5), 14.5);
  },
);

test("the host loop leaks no tensors", () => {
  setFusedAdamW(true);
  const p = { w: tf.variable(tf.ones([5, 5])) };
  const opt = new AdamW(p);
  const g = { w: tf.fill([5, 5], 3) };
  opt.applyGradients(g).gradNorm.dispose();
  const n = tf.memory().numTensors;
  for (let i = 0; i < 3; i++) opt.applyGradients(g).gradNorm.dispose();
  assert.equal(tf.memory().numTensors, n);
  opt.dispose();
  tf.dispose([g.w, p.w]);
});
