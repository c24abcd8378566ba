import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-cpu";
import { AdamW, clipByGlobalNorm } from "../../trainer/optim/adamw.js";
import { readOptimizerState, writeOptimizerState } from "../../models/adapters/optimizerState.js";
import { tempDir } from "../helpers/cli.js";

before(async () => {
  await tf.setBackend("cpu");
});

const close = (a: number, b: number, tol = 1e-6) => assert.ok(Math.abs(a - b) <= tol, `${a} ≠ ${b} (±${tol})`);

/** Deterministic pseudo-random gradients. */
function grads(step: number, shapes: Record<string, number[]>): Record<string, tf.Tensor> {
  const out: Record<string, tf.Tensor> = {};
  let s = 12345 + step * 7919;
  for (const [n, shape] of Object.entries(shapes)) {
    const size = shape.reduce((a, b) => a * b, 1);
    const d = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      s = (s * 1103515245 + 12345) % 2147483648;
      d[i] = (s / 2147483648 - 0.5) * 0.2;
    }
    out[n] = tf.tensor(d, shape);
  }
  return out;
}

describe("AdamW", () => {
  test("one step matches the hand-computed update (decoupled decay, bias correction)", () => {
    // p=1, g=0.5, lr=0.1, wd=0.1: m=0.05, v=0.005, m̂=0.5, v̂=0.25 → p = 1·0.99 − 0.1·0.5/0.5 = 0.89
    const p = tf.variable(tf.tensor1d([1, -2]));
    const opt = new AdamW({ p }, { lr: 0.1, weightDecay: 0.1 });
    const info = opt.applyGradients({ p: tf.tensor1d([0.5, 0]) });
    const [a, b] = p.dataSync();
    close(a, 0.89);
    close(b, -2 * 0.99); // zero gradient: only the decay moves it
    close(info.gradNorm.dataSync()[0], 0.5);
    info.gradNorm.dispose();
    assert.equal(opt.step, 1);
    // Second step, g = 0.5 again: m = 0.095, v = 0.0099; m̂ = 0.5, v̂ = 0.25 → p = 0.89·0.99 − 0.1
    opt.applyGradients({ p: tf.tensor1d([0.5, 0]) });
    close(p.dataSync()[0], 0.89 * 0.99 - 0.1, 1e-6);
    opt.dispose();
  });

  test("matches a float64 reference over 20 steps", () => {
    const lr = 1e-2;
    const init = [0.3, -0.1, 0.7];
    const p = tf.variable(tf.tensor1d(init));
    const opt = new AdamW({ p }, { lr });
    const ref = [...init];
    const m = [0, 0, 0];
    const v = [0, 0, 0];
    for (let t = 1; t <= 20; t++) {
      const g = grads(t, { p: [3] }).p;
      const gv = Array.from(g.dataSync());
      opt.applyGradients({ p: g });
      for (let i = 0; i < 3; i++) {
        m[i] = 0.9 * m[i] + 0.1 * gv[i];
        v[i] = 0.98 * v[i] + 0.02 * gv[i] * gv[i];
        const mh = m[i] / (1 - 0.9 ** t);
        const vh = v[i] / (1 - 0.98 ** t);
        ref[i] = ref[i] * (1 - lr * 0.1) - (lr * mh) / (Math.sqrt(vh) + 1e-8);
      }
    }
    const got = p.dataSync();
    for (let i = 0; i < 3; i++) close(got[i], ref[i], 1e-5);
    opt.dispose();
  });

  test("global gradient-norm clipping to 1.0", async () => {
    // ‖(3, 4), (0, 12)‖ = 13 → every gradient scaled by 1/13
    const g = { a: tf.tensor1d([3, 4]), b: tf.tensor1d([0, 12]) };
    const r = clipByGlobalNorm(g, 1.0);
    close(r.norm.dataSync()[0], 13, 1e-5);
    const a = r.grads.a.dataSync();
    const b = r.grads.b.dataSync();
    close(a[0], 3 / 13, 1e-6);
    close(a[1], 4 / 13, 1e-6);
    close(b[1], 12 / 13, 1e-6);
    const small = clipByGlobalNorm({ a: tf.tensor1d([0.3, 0.4]) }, 1.0);
    // Below the bound the gradient passes bit for bit (scaled by exactly 1).
    assert.deepEqual(Array.from(small.grads.a.dataSync()), [0.30000001192092896, 0.4000000059604645]);
    // Through the optimizer: with clipping, the first moment holds 0.1·g/13.
    const p = tf.variable(tf.tensor1d([0, 0]));
    const opt = new AdamW({ p }, { lr: 0.1, weightDecay: 0 });
    const info = opt.applyGradients({ p: tf.tensor1d([30, 40]) });
    close(info.gradNorm.dataSync()[0], 50, 1e-4);
    const st = await opt.getState();
    close(st.m.p.data[0], 0.1 * 0.6, 1e-6);
    close(st.v.p.data[1], 0.02 * 0.64, 1e-6);
    opt.dispose();
  });

  test("state saved to a file and restored gives a bit-identical next step", async () => {
    const dir = tempDir();
    const shapes = { "blk.0.attn_q.lora_a": [4, 8], "blk.0.attn_q.lora_b": [8, 4] };
    const mk = () => Object.fromEntries(Object.entries(shapes).map(([n, s], i) => [n, tf.variable(tf.fill(s, 0.01 * (i + 1)))])) as Record<string, tf.Variable>;
    const pa = mk();
    const a = new AdamW(pa, { lr: 1e-3 });
    for (let t = 1; t <= 3; t++) a.applyGradients(grads(t, shapes));
    const file = path.join(dir, "optimizer.bin");
    writeOptimizerState(file, await a.getState(), { rank: 4 });
    const saved = Object.fromEntries(Object.entries(pa).map(([n, x]) => [n, Float32Array.from(x.dataSync() as Float32Array)]));

    // A fresh process would rebuild the parameters from the adapter and the moments from the file.
    const pb = Object.fromEntries(Object.entries(saved).map(([n, d]) => [n, tf.variable(tf.tensor(d, shapes[n as keyof typeof shapes]))]));
    const b = new AdamW(pb, { lr: 1e-3 });
    const { state, meta } = readOptimizerState(file);
    assert.deepEqual(meta, { rank: 4 });
    b.setState(state);
    assert.equal(b.step, 3);
    a.applyGradients(grads(4, shapes));
    b.applyGradients(grads(4, shapes));
    for (const n of Object.keys(shapes)) {
      assert.deepEqual(Buffer.from(pb[n].dataSync().buffer), Buffer.from(pa[n].dataSync().buffer), `${n} differs after resume`);
    }
    // and the restored state differs from a fresh optimizer's (the test could not pass by accident)
    const fresh = new AdamW({ x: tf.variable(tf.fill([4, 8], 0.01)) }, { lr: 1e-3 });
    assert.equal(fresh.step, 0);
    a.dispose();
    b.dispose();
    fresh.dispose();
  });

  test("a mismatched or corrupt state is refused clearly", async () => {
    const dir = tempDir();
    const a = new AdamW({ x: tf.variable(tf.zeros([2, 3])) });
    const b = new AdamW({ x: tf.variable(tf.zeros([3, 2])) });
    const c = new AdamW({ y: tf.variable(tf.zeros([2, 3])) });
    const st = await a.getState();
    assert.throws(() => b.setState(st), /optimizer state for x has shape \[2,3\], the parameter has \[3,2\]/);
    assert.throws(() => c.setState(st), /does not match the adapter's parameters \(m: missing y; unexpected x\)/);
    const file = path.join(dir, "o.bin");
    writeOptimizerState(file, st);
    const buf = fs.readFileSync(file);
    fs.writeFileSync(file, buf.subarray(0, buf.length - 4));
    assert.throws(() => readOptimizerState(file), /not a valid optimizer state: expected \d+ bytes/);
    fs.writeFileSync(file, "hello world, not a state");
    assert.throws(() => readOptimizerState(file), /wrong magic/);
    assert.throws(() => readOptimizerState(path.join(dir, "none.bin")), /cannot read optimizer state .*ENOENT/);
    for (const o of [a, b, c]) o.dispose();
  });

  test("its moments are the only tensors it holds, and dispose gives them back", () => {
    const p = { w: tf.variable(tf.ones([5, 5])), b: tf.variable(tf.ones([5])) };
    const before = tf.memory();
    const opt = new AdamW(p);
    assert.equal(tf.memory().numTensors, before.numTensors + 4, "m and v per parameter, nothing beside them");
    const g = { w: tf.fill([5, 5], 3), b: tf.fill([5], 1) };
    opt.applyGradients(g).gradNorm.dispose();
    tf.dispose(Object.values(g));
    opt.dispose();
    assert.equal(tf.memory().numTensors, before.numTensors);
    assert.equal(tf.memory().numBytes, before.numBytes);
    for (const v of Object.values(p)) v.dispose();
  });

  test("no tensors leak per step", () => {
    const p = { w: tf.variable(tf.ones([5, 5])) };
    const opt = new AdamW(p);
    const g = { w: tf.fill([5, 5], 3) };
    opt.applyGradients(g).gradNorm.dispose();
    const n = tf.memory().numTensors;
    for (let i = 0; i < 10; i++) opt.applyGradients(g).gradNorm.dispose();
    assert.equal(tf.memory().numTensors, n);
    opt.dispose();
  });
});
