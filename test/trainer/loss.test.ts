import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-cpu";
import { k3Kl, ppoClipLoss } from "../../trainer/loss/ppo.js";
import { advantagesFor, binaryAdvantages, combinedAdvantages, hintSuffix, opdAdvantages } from "../../trainer/loss/advantages.js";
import { selectHint, topkOpdLoss, topkOverlap } from "../../trainer/loss/topk.js";

before(async () => {
  await tf.setBackend("cpu");
});

const close = (a: number, b: number, tol = 1e-5) => assert.ok(Math.abs(a - b) <= tol, `${a} ≠ ${b} (±${tol})`);
const closeAll = (a: ArrayLike<number>, b: number[], tol = 1e-5) => {
  assert.equal(a.length, b.length);
  for (let i = 0; i < b.length; i++) close(a[i], b[i], tol);
};

describe("PPO-clip surrogate", () => {
  // Three trained tokens + one padding position. lp_old is arbitrary; lp = lp_old + log ρ.
  const old = [-1.0, -2.0, -0.5, -3.0];
  const rho = [1.5, 0.5, 1.1, 7.0];
  const lp = old.map((o, i) => o + Math.log(rho[i]));

  test("clips the ratio on both sides, hand-computed loss and gradient", () => {
    // token 0: ρ=1.5, A=+1 → min(1.5, 1.28) = 1.28 (upper clip, no gradient)
    // token 1: ρ=0.5, A=−1 → min(−0.5, −0.8) = −0.8 (lower clip, no gradient)
    // token 2: ρ=1.1, A=+2 → 2.2 (inside the band, dL/dlp = −ρA/3 = −0.733333)
    // token 3: padding (mask 0), ignored whatever its values.
    const adv = [1, -1, 2, 5];
    const mask = [1, 1, 1, 0];
    const old2 = tf.tensor2d([old]);
    const adv2 = tf.tensor2d([adv]);
    const mask2 = tf.tensor2d([mask]);
    const lpT = tf.tensor2d([lp]);
    const r = ppoClipLoss({ logprobs: lpT, oldLogprobs: old2, advantages: adv2, mask: mask2 });
    close(r.loss.dataSync()[0], -(1.28 - 0.8 + 2.2) / 3);
    close(r.clipFraction.dataSync()[0], 2 / 3);
    const g = tf.grad((x: tf.Tensor) => ppoClipLoss({ logprobs: x as tf.Tensor2D, oldLogprobs: old2, advantages: adv2, mask: mask2 }).loss)(lpT);
    closeAll(g.dataSync(), [0, 0, -(1.1 * 2) / 3, 0]);
  });

  test("unclipped side keeps its gradient (ρ<1−ε with A>0, ρ>1+ε_high with A<0)", () => {
    // token 0: ρ=1.5, A=−1 → min(−1.5, −1.28) = −1.5, gradient −ρA/2 = 0.75
    // token 1: ρ=0.5, A=+1 → min(0.5, 0.8) = 0.5, gradient −ρA/2 = −0.25
    const lpT = tf.tensor2d([lp.slice(0, 2)]);
    const args = { oldLogprobs: tf.tensor2d([old.slice(0, 2)]), advantages: tf.tensor2d([[-1, 1]]), mask: tf.tensor2d([[1, 1]]) };
    const r = ppoClipLoss({ logprobs: lpT, ...args });
    close(r.loss.dataSync()[0], -(-1.5 + 0.5) / 2);
    close(r.clipFraction.dataSync()[0], 0);
    const g = tf.grad((x: tf.Tensor) => ppoClipLoss({ logprobs: x as tf.Tensor2D, ...args }).loss)(lpT);
    closeAll(g.dataSync(), [0.75, -0.25]);
  });

  test("the log-ratio is clamped at ±20", () => {
    const r = ppoClipLoss({
      logprobs: tf.tensor2d([[0]]),
      oldLogprobs: tf.tensor2d([[-30]]),
      advantages: tf.tensor2d([[-1]]),
      mask: tf.tensor2d([[1]]),
    });
    const v = r.loss.dataSync()[0];
    assert.ok(Number.isFinite(v));
    close(v / Math.exp(20), 1, 1e-5);
  });

  test("k3 KL to the base, alone and weighted by β", () => {
    // lp = log 0.5, base = log 0.25: d = log 0.5, k3 = 0.5 − log 0.5 − 1 = 0.193147
    const k = k3Kl(tf.tensor1d([Math.log(0.5), Math.log(0.3)]), tf.tensor1d([Math.log(0.25), Math.log(0.3)]));
    closeAll(k.dataSync(), [0.5 - Math.log(0.5) - 1, 0]);
    const base = {
      logprobs: tf.tensor2d([[Math.log(0.5)]]),
      oldLogprobs: tf.tensor2d([[Math.log(0.5)]]),
      advantages: tf.tensor2d([[1]]),
      mask: tf.tensor2d([[1]]),
      refLogprobs: tf.tensor2d([[Math.log(0.25)]]),
    };
    const noKl = ppoClipLoss(base);
    close(noKl.loss.dataSync()[0], -1);
    close(noKl.kl.dataSync()[0], 0.193147);
    const withKl = ppoClipLoss(base, { klBeta: 0.5 });
    close(withKl.loss.dataSync()[0], -1 + 0.5 * 0.193147);
    assert.throws(() => ppoClipLoss({ ...base, refLogprobs: undefined }, { klBeta: 0.1 }), /refLogprobs/);
  });

  test("mean is over every trained token of the batch; empty mask gives 0", () => {
    // two rows, 1 + 2 trained tokens, ρ = 1: L = −(3 + 1 + 1)/3
    const z = tf.zeros<tf.Rank.R2>([2, 2]);
    const r = ppoClipLoss({
      logprobs: z,
      oldLogprobs: z,
      advantages: tf.tensor2d([
        [3, 9],
        [1, 1],
      ]),
      mask: tf.tensor2d([
        [1, 0],
        [1, 1],
      ]),
    });
    close(r.loss.dataSync()[0], -5 / 3);
    const e = ppoClipLoss({ logprobs: z, oldLogprobs: z, advantages: tf.ones<tf.Rank.R2>([2, 2]), mask: z });
    close(e.loss.dataSync()[0], 0);
  });
});

describe("advantages", () => {
  test("binary: A = r on every token; 0 or missing reward masks the sample out", () => {
    assert.deepEqual(binaryAdvantages(1, 3), [1, 1, 1]);
    assert.deepEqual(binaryAdvantages(-1, 2), [-1, -1]);
    assert.equal(binaryAdvantages(0, 2), null);
    assert.equal(binaryAdvantages(undefined, 2), null);
  });

  test("OPD: lp_teacher − lp_old per token", () => {
    closeAll(opdAdvantages([-0.5, -1, -2], [-1, -1, -0.5]), [0.5, 0, -1.5]);
    assert.throws(() => opdAdvantages([-1], [-1, -2]), /teacher has 1/);
    assert.equal(hintSuffix("be brief"), "\n\n[user's hint / instruction]\nbe brief");
  });

  test("combined: the four cases of method.md's table", () => {
    const oldLp = [-1, -2, -0.5];
    const teacherLp = [-0.5, -2.5, -0.5];
    closeAll(combinedAdvantages({ reward: 1, teacherLp, oldLp })!, [1.5, 0.5, 1]); // hint and ±1
    closeAll(combinedAdvantages({ reward: -1, teacherLp, oldLp })!, [-0.5, -1.5, -1]);
    closeAll(combinedAdvantages({ teacherLp, oldLp })!, [0.5, -0.5, 0]); // hint only
    closeAll(combinedAdvantages({ reward: 0, teacherLp, oldLp })!, [0.5, -0.5, 0]);
    assert.deepEqual(combinedAdvantages({ reward: -1, oldLp }), [-1, -1, -1]); // ±1 only
    assert.equal(combinedAdvantages({ reward: 0, oldLp }), null); // neither
    closeAll(combinedAdvantages({ reward: 1, teacherLp, oldLp }, { wOpd: 2, wRl: 0.5 })!, [1.5, -0.5, 0.5]);
  });

  test("advantagesFor dispatches per method", () => {
    const s = { reward: 1, teacherLp: [-0.5], oldLp: [-1] };
    assert.deepEqual(advantagesFor("binary", s), [1]);
    assert.deepEqual(advantagesFor("opd", s), [0.5]);
    assert.deepEqual(advantagesFor("combined", s), [1.5]);
    assert.deepEqual(advantagesFor("topk", s), [1]);
    assert.equal(advantagesFor("opd", { reward: 1, oldLp: [-1] }), null);
  });
});

describe("top-k select", () => {
  test("overlap and hint choice", () => {
    const student = [
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ];
    const a = [
      [1, 2, 9, 10],
      [5, 11, 12, 13],
    ]; // (2/4 + 1/4) / 2 = 0.375
    const b = [
      [4, 3, 2, 1],
      [8, 7, 0, 0],
    ]; // (4/4 + 2/4) / 2 = 0.75
    close(topkOverlap(student, a), 0.375);
    close(topkOverlap(student, b), 0.75);
    assert.equal(selectHint(student, [a, b]), 1);
    assert.equal(selectHint(student, [a, a]), 0);
    assert.throws(() => selectHint(student, []), /no candidate/);
  });

  test("top-k OPD loss, hand-computed", () => {
    // One position, K = 2. p_old = 0.6, 0.2 → w = 0.75, 0.25.
    // teacher 0.3, 0.8 → A = clip(log 0.5, ±1) = −0.693147, clip(log 4, ±1) = 1.
    // ρ = 1: L = −(0.75·(−0.693147) + 0.25·1) = 0.269860. A second, masked position is ignored.
    const old = tf.tensor3d([
      [
        [Math.log(0.6), Math.log(0.2)],
        [-1, -1],
      ],
    ]);
    const teacher = tf.tensor3d([
      [
        [Math.log(0.3), Math.log(0.8)],
        [0, 0],
      ],
    ]);
    const mask = tf.tensor2d([[1, 0]]);
    const loss = topkOpdLoss({ logprobs: old, oldLogprobs: old, teacherLogprobs: teacher, mask });
    close(loss.dataSync()[0], 0.26986);
    // d L / d lp_v = −w_v·ρ_v·A_v (inside the clip band)
    // (a separate tensor for lp_θ, so no gradient flows into lp_old)
    const g = tf.grad((x: tf.Tensor) => topkOpdLoss({ logprobs: x as tf.Tensor3D, oldLogprobs: old, teacherLogprobs: teacher, mask }))(old.clone());
    closeAll(g.dataSync(), [0.75 * 0.693147, -0.25, 0, 0]);
  });
});
