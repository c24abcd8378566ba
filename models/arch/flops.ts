import type { ModelConfig } from "./config.js";
import { LINEAR_NAMES, linearShape } from "./layout.js";

/**
 * FLOPs of one training step of B sequences of T tokens with `scored` response tokens each, as
 * bench/trainer-real-size.ts and doctor count them: 3 passes over
 * the blocks' linear weights (forward, recompute, backward to the activations; frozen weights
 * need no weight gradient), attention, the LoRA products, and 2 passes of the head over the
 * scored rows.
 */
export function flopsPerStep(c: ModelConfig, B: number, T: number, scored: number, rank: number): number {
  let linear = 0;
  let lora = 0;
  for (const n of LINEAR_NAMES) {
    const [i, o] = linearShape(c, n);
    linear += i * o;
    lora += rank * (i + o);
  }
  const N = B * T;
  const attention = c.nLayer * 2 * 2 * c.nHead * c.headDim * (T / 2);
  const body = 3 * (2 * c.nLayer * linear + attention) * N + 4 * 2 * c.nLayer * lora * N;
  const head = 2 * 2 * c.nVocab * c.nEmbd * B * scored;
  return body + head;
}
