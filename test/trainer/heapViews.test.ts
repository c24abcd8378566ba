/**
 * The wasm heap read and written in place (trainer/wasm/heap.ts, inPlaceKernels.ts): the native
 * products read their activation where wasm keeps it and write their result into a tensor's own
 * memory; Slice, Unpack and SplitV copy only their own elements; Identity and same-type Cast
 * share data as tfjs's other backends do. Checked: the views are the heap itself (not copies),
 * every slice, unstack and split is the stock kernel's bit for bit, the products and gradients
 * are the same as with the copies, a shared clone outlives its source, and nothing leaks
 * (tensors or heap data).
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { frozenLinear, mm } from "../../trainer/model/fast-matmul.js";
import { hostMatrix, nativeProductsFor } from "../../trainer/native/gemm.js";
import { readF32, setHeapViews, writeF32 } from "../../trainer/wasm/heap.js";
import { fill } from "../../common/random/fill.js";

const skip = process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1";

before(async () => {
  await initBackend("wasm");
});

interface HeapOwner {
  wasm: { HEAPU8: Uint8Array };
  numDataIds(): number;
}
const backend = () => tf.backend() as unknown as HeapOwner;

test("a wasm tensor is read as a view of the heap and written in place", () => {
  assert.equal(tf.getBackend(), "wasm");
  const x = tf.tensor2d(fill(12, 1), [3, 4]);
  const v = readF32(x);
  assert.equal(v.buffer, backend().wasm.HEAPU8.buffer, "readF32 gives the heap itself, not a copy");
  assert.deepEqual(Array.from(v), Array.from(x.dataSync()));
  const y = writeF32<tf.Rank.R2>([2, 3], (out) => out.set([1, 2, 3, 4, 5, 6]));
  assert.deepEqual(y.shape, [2, 3]);
  assert.deepEqual(Array.from(y.dataSync()), [1, 2, 3, 4, 5, 6]);
  // A fill that throws frees the tensor's memory and leaves no tensor behind.
  const [tensors, ids] = [tf.memory().numTensors, backend().numDataIds()];
  assert.throws(
    () =>
      writeF32([4], () => {
        throw new Error("fill failed");
      }),
    /fill failed/,
  );
  assert.deepEqual([tf.memory().numTensors, backend().numDataIds()], [tensors, ids]);
  setHeapViews(false);
  try {
    assert.notEqual(readF32(x).buffer, backend().wasm.HEAPU8.buffer, "switched off: a copy, as before");
  } finally {
    setHeapViews(true);
  }
  tf.dispose([x, y]);
});

test("wasm's clone shares the data, outlives its source, and frees it once", () => {
  const [tensors, ids] = [tf.memory().numTensors, backend().numDataIds()];
  const x = tf.tensor1d([1, 2, 3]);
  const c = tf.clone(x);
  const same = tf.cast(x, "float32");
  const int = tf.cast(x, "int32");
  assert.equal(backend().numDataIds(), ids + 2, "the clone and the same-type cast share x's data; the int32 cast has its own");
  x.dispose();
  assert.deepEqual(Array.from(c.dataSync()), [1, 2, 3]);
  assert.deepEqual(Array.from(same.dataSync()), [1, 2, 3]);
  assert.deepEqual(Array.from(int.dataSync()), [1, 2, 3]);
  tf.dispose([c, same, int]);
  assert.deepEqual([tf.memory().numTensors, backend().numDataIds()], [tensors, ids]);
});

/** y = frozenLinear(mm(x, a)·…): values and gradients for x and a, with the views on or off. */
function run(views: boolean): { y: Float32Array; dx: Float32Array; da: Float32Array } {
  setHeapViews(views);
  try {
    const [rows, d, r, out] = [70, 64, 16, 300];
    const w = hostMatrix(fill(out * d, 5), out, d);
    const x = tf.tensor2d(fill(rows * d, 6), [rows, d]);
    const a = tf.tensor2d(fill(d * r, 7), [d, r]);
    const b = tf.tensor2d(fill(r * d, 8), [r, d]);
    const dy = tf.tensor2d(fill(rows * out, 9), [rows, out]);
    const f = (xi: tf.Tensor, ai: tf.Tensor) => {
      const h = tf.add<tf.Tensor2D>(xi, mm(mm(xi as tf.Tensor2D, ai as tf.Tensor2D), b));
      return frozenLinear(tf.mul(h, tf.sigmoid(h)), w);
    };
    const y = tf.tidy(() => f(x, a));
    const [dx, da] = tf.grads((xi: tf.Tensor, ai: tf.Tensor) => tf.sum(tf.mul(f(xi, ai), dy)))([x, a]);
    const res = { y: y.dataSync() as Float32Array, dx: dx.dataSync() as Float32Array, da: da.dataSync() as Float32Array };
    tf.dispose([x, a, b, dy, y, dx, da]);
    return res;
  } finally {
    setHeapViews(true);
  }
}

test("the native products and the gradients through them are the same with the heap views as with the copies", { skip }, () => {
  assert.ok(nativeProductsFor(tf.getBackend()), "the native products load here");
  const [tensors, ids] = [tf.memory().numTensors, backend().numDataIds()];
  const before = run(false);
  const now = run(true);
  for (const k of ["y", "dx", "da"] as const) {
    assert.ok(before[k].some((v) => v !== 0));
    assert.deepEqual(now[k], before[k], `${k} differs`);
  }
  assert.deepEqual([tf.memory().numTensors, backend().numDataIds()], [tensors, ids], "no tensor or heap data left behind");
});

/** Runs `f` with the stock kernels (views off) and in place; returns both results' values and shapes. */
function both(f: () => tf.Tensor | tf.Tensor[]): Array<Array<{ shape: number[]; dtype: string; values: number[] }>> {
  return [false, true].map((on) => {
    setHeapViews(on);
    try {
      const out = tf.tidy(f);
      const list = Array.isArray(out) ? out : [out];
      const res = list.map((t) => ({ shape: t.shape, dtype: t.dtype, values: Array.from(t.dataSync()) }));
      tf.dispose(list);
      return res;
    } finally {
      setHeapViews(true);
    }
  });
}

test("slices, unstacks and splits read in place equal the stock kernels' bit for bit", () => {
  const [tensors, ids] = [tf.memory().numTensors, backend().numDataIds()];
  const x4 = tf.tensor4d(fill(2 * 5 * 3 * 4, 11), [2, 5, 3, 4]);
  const i3 = tf.tensor3d(
    Int32Array.from(fill(4 * 3 * 5, 12), (v) => Math.round(v * 100)),
    [4, 3, 5],
    "int32",
  );
  const b2 = tf.tensor2d(
    Uint8Array.from(fill(6 * 7, 13), (v) => (v > 0 ? 1 : 0)),
    [6, 7],
    "bool",
  );
  const cases: Array<[string, () => tf.Tensor | tf.Tensor[]]> = [
    ["4-D, outer rows (contiguous)", () => tf.slice(x4, [1, 0, 0, 0], [1, 5, 3, 4])],
    ["4-D, a run of the second axis", () => tf.slice(x4, [0, 1, 0, 0], [2, 3, 3, 4])],
    ["4-D, the last axis halved (RoPE)", () => tf.slice(x4, [0, 0, 0, 2], [2, 5, 3, 2])],
    ["4-D, every axis cut, size -1", () => tf.slice(x4, [1, 2, 1, 1], [-1, 2, 2, -1])],
    ["4-D, an empty slice", () => tf.slice(x4, [0, 0, 0, 0], [2, 0, 3, 4])],
    ["int32 3-D", () => tf.slice(i3, [1, 1, 2], [3, 2, 3])],
    ["bool 2-D columns", () => tf.slice(b2, [2, 3], [3, 4])],
    ["unstack axis 0", () => tf.unstack(x4)],
    ["unstack axis 2", () => tf.unstack(x4, 2)],
    ["unstack int32 last axis", () => tf.unstack(i3, -1)],
    ["split axis 1 by sizes", () => tf.split(x4, [1, 3, 1], 1)],
    ["split last axis in two", () => tf.split(x4, 2, -1)],
    ["split bool rows", () => tf.split(b2, [2, 4], 0)],
  ];
  for (const [what, f] of cases) {
    const [stock, now] = both(f);
    assert.ok(stock.length > 0, what);
    assert.deepEqual(now, stock, what);
  }
  tf.dispose([x4, i3, b2]);
  assert.deepEqual([tf.memory().numTensors, backend().numDataIds()], [tensors, ids], "no tensor or heap data left behind");
});
