/**
 * Matrix products whose forward AND backward use only plain 2-D a·b products. On the wasm
 * backend, tf.matMul with transposeA/transposeB runs 10–25x slower than without (no XNNPACK
 * path), and tfjs's own MatMul gradient uses exactly those flags; rank-3 batched products are
 * ~8x slower than a loop of 2-D ones. Measured with bench/trainer-matmul.ts.
 */
import * as tf from "@tensorflow/tfjs-core";

type In = tf.Tensor | tf.GradSaveFunc;

/** a [M,K] · b [K,N]; gradients for both: da = dy·bᵀ, db = aᵀ·dy. */
export function mm(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((x: In, y: In, save: In) => {
    const [xa, yb] = [x as tf.Tensor2D, y as tf.Tensor2D];
    (save as tf.GradSaveFunc)([xa, yb]);
    return {
      value: tf.matMul(xa, yb),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sa, sb] = saved as tf.Tensor2D[];
        const d = dy as tf.Tensor2D;
        return [tf.matMul(d, tf.transpose(sb)), tf.matMul(tf.transpose(sa), d)];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}

/** a [M,K] · b [N,K]ᵀ; gradients for both: da = dy·b, db = dyᵀ·a. */
export function mmT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((x: In, y: In, save: In) => {
    const [xa, yb] = [x as tf.Tensor2D, y as tf.Tensor2D];
    (save as tf.GradSaveFunc)([xa, yb]);
    return {
      value: tf.matMul(xa, tf.transpose(yb)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sa, sb] = saved as tf.Tensor2D[];
        const d = dy as tf.Tensor2D;
        return [tf.matMul(d, sb), tf.matMul(tf.transpose(d), sa)];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}

/**
 * x [M,K] · w [N,K]ᵀ with w a frozen weight kept in [N,K] layout (the vocabulary projection):
 * computed as (w·xᵀ)ᵀ; only x gets a gradient, dx = dy·w (a plain product).
 */
export function mmFrozenT(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((xi: In) => ({
    value: tf.transpose(tf.matMul(w, tf.transpose(xi as tf.Tensor2D))),
    gradFunc: (dy: tf.Tensor) => tf.matMul(dy as tf.Tensor2D, w),
  }));
  return f(x) as tf.Tensor2D;
}

/**
 * x [M,K] · w [K,N] with w a frozen (non-trainable, long-lived) weight: only x gets a
 * gradient, dx = dy·wᵀ computed as (w·dyᵀ)ᵀ so the large weight is never transposed.
 */
export function mmFrozen(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((xi: In) => ({
    value: tf.matMul(xi as tf.Tensor2D, w),
    gradFunc: (dy: tf.Tensor) => tf.transpose(tf.matMul(w, tf.transpose(dy as tf.Tensor2D))),
  }));
  return f(x) as tf.Tensor2D;
}
