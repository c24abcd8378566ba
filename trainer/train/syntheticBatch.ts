/**
 * A training batch of made-up token ids, for timing a step at a real shape (the doctor's train
 * probe, bench/trainer-real-size.ts, bench/trainer-profile.ts): ids spread over the vocabulary,
 * half the samples liked and half disliked, served log-probs given (no extra forward for them).
 */
import type { PreparedSample } from "./tokenize.js";

/** One sample per entry of `shape`: `len` tokens, the first `prompt` of them the prompt. */
export function syntheticSamples(nVocab: number, shape: ReadonlyArray<{ len: number; prompt: number }>): PreparedSample[] {
  return shape.map(({ len, prompt }, b) => ({
    tokens: Array.from({ length: len }, (_, i) => (i * 7919 + b * 104729 + 13) % nVocab),
    promptLength: prompt,
    reward: b % 2 === 0 ? 1 : -1,
    servedLogprobs: new Array<number>(len - prompt).fill(-5),
    teachers: [],
    truncated: false,
  }));
}

/** B samples of T tokens each, a quarter of them (at most 16) prompt. */
export function syntheticBatch(nVocab: number, B: number, T: number): PreparedSample[] {
  const prompt = Math.max(1, Math.min(16, Math.floor(T / 4)));
  return syntheticSamples(
    nVocab,
    Array.from({ length: B }, () => ({ len: T, prompt })),
  );
}
