/**
 * RoPE's native pass (trainer/model/rope.ts, trainer/native/gemm/rope.cc) gives what tfjs's
 * kernels give (those are checked against llama.cpp by the parity tests), value and gradient, in
 * both pair layouts (neox: qwen; normal: llama), with part of a head left unrotated, for a padded
 * grid and a packed batch, on the wasm and js cpu backends; bad arguments are refused.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { applyRope, nativeRopeFor, ropeRows, ropeTables, setNativeRope } from "../../trainer/model/rope.js";
import { configOfShape } from "../../models/trainability.js";
import { findShape } from "../../models/tiny/shapes.js";
import { fill } from "../../common/random/fill.js";
import { skipWithoutNative, loadedNative } from "../helpers/native.js";

const skip = skipWithoutNative;

after(() => setNativeRope(true));

function maxDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
}

const base = configOfShape(findShape("qwen2.5-0.5b")!);

for (const backend of ["wasm", "cpu"] as const) {
  for (const ropeMode of ["neox", "normal"] as const) {
    for (const ropeDim of [16, 8]) {
      test(`${backend}, ${ropeMode}, ${ropeDim} of 16 dims rotated: the native pass gives tfjs's value and gradient, grid and packed`, skip, async () => {
        loadedNative();
        await initBackend(backend);
        assert.ok(nativeRopeFor(backend), "the native pass is used on this backend");
        const config = { ...base, ropeDim, ropeMode };
        const cases = [
          { shape: [2, 5, 3, 16], tables: ropeTables(config, 5) },
          { shape: [1, 9, 3, 16], tables: ropeRows(config, [4, 5]) },
        ];
        for (const { shape, tables } of cases) {
          const n = shape.reduce((a, d) => a * d, 1);
          const x = tf.tensor4d(fill(n, 21), shape as [number, number, number, number]);
          const w = tf.tensor4d(fill(n, 22), shape as [number, number, number, number]);
          const f = (t: tf.Tensor) => tf.sum(tf.mul(applyRope(t as tf.Tensor4D, tables.cos, tables.sin, config), w));
          const run = (native: boolean) => {
            setNativeRope(native);
            const value = applyRope(x, tables.cos, tables.sin, config).dataSync() as Float32Array;
            const grad = tf.grad(f)(x).dataSync() as Float32Array;
            return { value, grad };
          };
          const ours = run(true);
          const theirs = run(false);
          setNativeRope(true);
          assert.ok(maxDiff(ours.value, theirs.value) < 1e-6, `value off by ${maxDiff(ours.value, theirs.value)} (${shape.join(" × ")})`);
          assert.ok(maxDiff(ours.grad, theirs.grad) < 1e-6, `gradient off by ${maxDiff(ours.grad, theirs.grad)} (${shape.join(" × ")})`);
          // Not the identity: positions past 0 really rotate.
          assert.ok(maxDiff(ours.value, x.dataSync() as Float32Array) > 0.01, "the rotation changed x");
          tf.dispose([x, w, tables.cos, tables.sin]);
        }
      });
    }
  }
}

test("native RoPE refuses bad sizes and an odd rotated width", skip, () => {
  const g = loadedNative();
  const x = new Float32Array(2 * 3 * 8);
  const out = new Float32Array(x.length);
  const table = new Float32Array(2 * 4);
  assert.throws(() => g.rope!(x, table, table, out, 2, 2, 3, 8, 7, true, false), /nRot must be even/);
  assert.throws(() => g.rope!(x, table, table, out, 2, 2, 3, 8, 10, true, false), /at most headDim/);
  assert.throws(() => g.rope!(x, table.subarray(1), table, out, 2, 2, 3, 8, 8, true, false), /cos and sin 8/);
  assert.throws(() => g.rope!(x, table, table, out.subarray(1), 2, 2, 3, 8, 8, true, false), /x and out need 48 floats/);
  assert.throws(() => g.rope!(x, table, table, out, 2, 2, 3, 8, 8, 1 as unknown as boolean, false), /booleans/);
  g.rope!(x, table, table, out, 2, 2, 3, 8, 8, true, false);
});
