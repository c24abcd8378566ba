/**
 * The context each served conversation gets when the user has not set one: the model's trained
 * context up to DEFAULT_CONTEXT_CAP tokens. node-llama-cpp fits a `{ max }` context to free
 * memory, and llama.cpp touches every page of the KV cache it allocates: left at a trained
 * context of 40,960 (Qwen3), a 1.7B model's 4 sequences took 18 GiB of a 24 GiB machine on the
 * CPU, and the trainer was refused for want of RAM. 8,192 tokens holds an agent's tool schemas
 * and a long chat; a longer context is one setting away (the model's load settings, `--context`).
 */
export const DEFAULT_CONTEXT_CAP = 8192;

/** The default upper bound on a served sequence's context, given the model's trained context. */
export function defaultServingContext(trainContextSize: number): number {
  return Math.min(trainContextSize, DEFAULT_CONTEXT_CAP);
}
