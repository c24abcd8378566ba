import type { CoreClient } from "./client.js";

/**
 * Scores answers under the base model: log p(answer | prompt) = log p(prompt + answer) −
 * log p(prompt), per token. Two whole-text scorings rather than offsets into one, so a
 * tokenization that merges across the seam cannot misplace the boundary; prompts repeat, so
 * theirs are cached. For plain-completion scenarios (the prompt is the text the answer continues).
 */
export class FluencyMeter {
  private readonly prompts = new Map<string, Promise<{ sum: number; tokens: number }>>();
  private sum = 0;
  private tokens = 0;

  constructor(private readonly base: CoreClient) {}

  async add(prompt: string, answer: string): Promise<void> {
    let p = this.prompts.get(prompt);
    if (!p) this.prompts.set(prompt, (p = this.base.scoreText(prompt)));
    const [before, whole] = await Promise.all([p, this.base.scoreText(prompt + answer)]);
    const n = whole.tokens - before.tokens;
    if (n <= 0) return; // an empty answer says nothing about fluency
    this.sum += whole.sum - before.sum;
    this.tokens += n;
  }

  /** The mean since the last take, and starts over. */
  take(): { meanLogprob: number; tokens: number } | null {
    const r = this.tokens > 0 ? { meanLogprob: this.sum / this.tokens, tokens: this.tokens } : null;
    this.sum = 0;
    this.tokens = 0;
    return r;
  }
}
