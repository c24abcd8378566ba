/**
 * Attention as one host op (trainer/model/attention-host.ts) against attention written plainly
 * with tfjs ops here: per sequence and query head, softmax(scale·q·kᵀ + causal mask)·v, query
 * head h reading KV head floor(h / (H/Hkv)); values and the gradients of q, k and v (tf.grads of
 * the same weighted sum), on packed sequences of different lengths and on a padded grid.
 */
import { before, after, test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { hostAttention, setHostAttention, type SeqRows } from "../../trainer/model/attention-host.js";
import { causalMask } from "../../trainer/model/block.js";
import { nativeGemm, nativeProductsFor } from "../../trainer/native/gemm.js";

before(async () => {
  await initBackend();
});
after(() => setHostAttention(true));

/** The plain composition: [rows, H·Dv]. */
function reference(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, seqs: SeqRows, scale: number): tf.Tensor2D {
  const [, , H, D] = q.shape;
  const [Hkv, Dv] = [k.shape[2], v.shape[3]];
  const parts = seqs.lens.map((L, s) => {
    const o = seqs.offsets[s];
    const heads = Array.from({ length: H }, (_, h) => {
      const j = Math.floor(h / (H / Hkv));
      const qh = tf.reshape<tf.Rank.R2>(tf.slice(q, [0, o, h, 0], [1, L, 1, D]), [L, D]);
      const kh = tf.reshape<tf.Rank.R2>(tf.slice(k, [0, o, j, 0], [1, L, 1, D]), [L, D]);
      const vh = tf.reshape<tf.Rank.R2>(tf.slice(v, [0, o, j, 0], [1, L, 1, Dv]), [L, Dv]);
      const p = tf.softmax(tf.add(tf.mul(tf.matMul(qh, kh, false, true), scale), causalMask(L)));
      return tf.matMul(p, vh);
    });
    return tf.concat(heads, 1);
  });
  return tf.concat(parts, 0) as tf.Tensor2D;
}

const maxDiff = (a: tf.Tensor, b: tf.Tensor): number => tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);

for (const [name, lens] of [
  ["packed sequences of different lengths", [5, 1, 7, 3]],
  ["a padded grid", [6, 6]],
] as const) {
  test(`host attention equals the plain composition, values and gradients: ${name}`, (t) => {
    if (!nativeProductsFor(tf.getBackend())) return t.skip("the native addon is not built: the host op is not used");
    const [H, Hkv, D] = [6, 2, 8];
    const rows = lens.reduce((a, b) => a + b, 0);
    const offsets = lens.map((_, i) => lens.slice(0, i).reduce((a, b) => a + b, 0));
    const seqs = { lens, offsets };
    const scale = 1 / Math.sqrt(D);
    const q = tf.randomNormal<tf.Rank.R4>([1, rows, H, D], 0, 1, "float32", 1);
    const k = tf.randomNormal<tf.Rank.R4>([1, rows, Hkv, D], 0, 1, "float32", 2);
    const v = tf.randomNormal<tf.Rank.R4>([1, rows, Hkv, D], 0, 1, "float32", 3);
    const dy = tf.randomNormal<tf.Rank.R2>([rows, H * D], 0, 1, "float32", 4);
    const host = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => {
      const out = hostAttention(a as tf.Tensor4D, b as tf.Tensor4D, c as tf.Tensor4D, seqs, scale);
      assert.ok(out, "the host op runs where the addon is built");
      return out;
    };
    const plain = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => reference(a as tf.Tensor4D, b as tf.Tensor4D, c as tf.Tensor4D, seqs, scale);
    const yHost = host(q, k, v);
    const yRef = plain(q, k, v);
    assert.deepEqual(yHost.shape, [rows, H * D]);
    assert.ok(maxDiff(yHost, yRef) < 1e-5, `values differ by ${maxDiff(yHost, yRef)}`);
    const gHost = tf.grads((a, b, c) => tf.sum(tf.mul(host(a, b, c), dy)))([q, k, v]);
    const gRef = tf.grads((a, b, c) => tf.sum(tf.mul(plain(a, b, c), dy)))([q, k, v]);
    for (const [i, what] of ["q", "k", "v"].entries()) {
      assert.deepEqual(gHost[i].shape, gRef[i].shape);
      const d = maxDiff(gHost[i], gRef[i]);
      // The gradients are O(1) here: an error in any row or head is far above this.
      assert.ok(d < 1e-4, `the gradient of ${what} differs by ${d}`);
      assert.ok(tf.max(tf.abs(gRef[i])).dataSync()[0] > 0.1, `the ${what} gradient is not trivially zero`);
    }
  });
}

test("host attention refuses sequences that do not cover the batch's rows", (t) => {
  if (!nativeProductsFor(tf.getBackend())) return t.skip("the native addon is not built: the host op is not used");
  const q = tf.zeros<tf.Rank.R4>([1, 3, 2, 4]);
  const kv = tf.zeros<tf.Rank.R4>([1, 3, 1, 4]);
  assert.throws(() => hostAttention(q, kv, kv, { lens: [2], offsets: [0] }, 0.5), /sequences of 2 rows for a batch of 3/);
});

test("host attention stands aside when switched off (block.ts composes tfjs's ops)", () => {
  setHostAttention(false);
  try {
    const q = tf.zeros<tf.Rank.R4>([1, 2, 2, 4]);
    const kv = tf.zeros<tf.Rank.R4>([1, 2, 1, 4]);
    assert.equal(hostAttention(q, kv, kv, { lens: [2], offsets: [0] }, 0.5), null);
  } finally {
    setHostAttention(true);
  }
});

test("copyHeads gathers a group's heads head-major and puts them back; refuses heads outside the arrays", (t) => {
  const g = nativeGemm();
  if (!g?.copyHeads) return t.skip("the native addon is not built");
  // 3 rows of 4 heads × 2 floats; the group of heads 2 and 3 over rows 1 and 2.
  const matrix = Float32Array.from({ length: 24 }, (_, i) => i);
  const block = new Float32Array(8);
  g.copyHeads(matrix, block, 8, 1, 2, 4, 2, 2, false);
  // head 2 at rows 1, 2; then head 3 at rows 1, 2.
  assert.deepEqual([...block], [12, 13, 20, 21, 14, 15, 22, 23]);
  const back = new Float32Array(24);
  g.copyHeads(
    back,
    block.map((x) => -x),
    8,
    1,
    2,
    4,
    2,
    2,
    true,
  );
  assert.deepEqual(
    [...back],
    [...matrix].map((x, i) => (i >= 8 && i % 8 >= 4 ? -x : 0)),
  );
  assert.throws(() => g.copyHeads!(matrix, block, 8, 2, 2, 4, 2, 2, false), /outside the matrix or the block/);
  assert.throws(() => g.copyHeads!(matrix, new Float32Array(7), 8, 1, 2, 4, 2, 2, false), /outside the matrix or the block/);
  assert.throws(() => g.copyHeads!(matrix, block, 8, 0, 2, 6, 2, 2, false), /outside the matrix or the block/);
  assert.throws(() => Reflect.apply(g.copyHeads!.bind(g), g, [matrix, block, 8]), /copyHeads expects/);
});
