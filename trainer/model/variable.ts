import * as tf from "@tensorflow/tfjs-core";

/**
 * A variable that takes over `initial`'s data. `tf.variable(t)` shares t's data and counts a
 * second reference, so `t` must be disposed or it outlives the variable: once the variable is
 * assigned or disposed, `t` still holds its first value. Every LoRA and AdamW state the trainer
 * made leaked that way (the soak's trainer RSS grew ~7 MiB a cycle, one adapter per verify,
 * rollback and gate).
 */
export function variableFrom<R extends tf.Rank>(initial: tf.Tensor<R>, trainable: boolean, name?: string): tf.Variable<R> {
  try {
    return tf.variable(initial, trainable, name);
  } finally {
    initial.dispose();
  }
}
