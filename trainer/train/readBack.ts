import * as tf from "@tensorflow/tfjs-core";

/**
 * Reads several tensors back from the backend in ONE asynchronous read (flattened, cast to
 * float32, concatenated): on a GPU each read waits for the queue to drain, so a step reads as
 * rarely as it can; int32 ids below 2^24 survive the cast exactly. Synchronous reads
 * (dataSync) do not exist on GPU backends in Node. The inputs stay the caller's.
 */
export async function readBack(tensors: tf.Tensor[]): Promise<Float32Array[]> {
  if (tensors.length === 0) return [];
  const flat = tf.tidy(() => tf.concat(tensors.map((t) => tf.reshape(t.dtype === "float32" ? t : tf.cast(t, "float32"), [-1]))));
  let all: Float32Array;
  try {
    all = (await flat.data()) as Float32Array;
  } finally {
    flat.dispose();
  }
  const out: Float32Array[] = [];
  let off = 0;
  for (const t of tensors) {
    out.push(all.subarray(off, off + t.size));
    off += t.size;
  }
  return out;
}
