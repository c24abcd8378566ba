import type { LlamaModel, Token } from "node-llama-cpp";

/** Tokens detokenized again each step before older ones are folded into the settled text. */
const FOLD_AFTER = 8;
/** Preceding tokens given to the detokenizer as context (its space / prefix heuristics use them). */
const CONTEXT_TOKENS = 3;

/**
 * The text of a growing answer, one token at a time, in O(new tokens) per step: detokenizing
 * the whole answer every step (as the loop once did) costs O(n²) over an answer, about 1 ms of
 * JS-thread time per token by 2,000 tokens. Text of tokens that ended on a complete character
 * is settled and kept; only the tokens after it are detokenized again, with the few settled
 * tokens before them as context, so that the result equals detokenizing everything at once
 * (test/inference/detokenizer.test.ts checks it token by token on both tokenizer kinds).
 */
export class IncrementalDetokenizer {
  private readonly tokens: Token[] = [];
  private settled = "";
  /** tokens[0, cut) make up `settled` */
  private cut = 0;
  private current = "";
  /** the last tokens before the text (a prompt it continues): how its first token reads depends on them */
  private readonly lead: Token[];

  constructor(
    private readonly model: Pick<LlamaModel, "detokenize">,
    before: readonly number[] = [],
  ) {
    this.lead = before.slice(-CONTEXT_TOKENS) as Token[];
  }

  get text(): string {
    return this.current;
  }

  /** Length of the text's start that no later token can change. */
  get settledLength(): number {
    return this.settled.length;
  }

  get length(): number {
    return this.tokens.length;
  }

  /** Adds a token and returns the whole text so far. */
  push(token: number): string {
    this.tokens.push(token as Token);
    const tail = this.tokens.slice(this.cut);
    const context =
      this.cut >= CONTEXT_TOKENS
        ? this.tokens.slice(this.cut - CONTEXT_TOKENS, this.cut)
        : [...this.lead, ...this.tokens.slice(0, this.cut)].slice(-CONTEXT_TOKENS);
    const tailText = this.model.detokenize(tail, false, context);
    this.current = this.settled + tailText;
    // Settle only on a complete character: a token may end inside a multi-byte one. (A U+FFFD
    // before the end stands for invalid bytes that no later token can complete.)
    if (tail.length >= FOLD_AFTER && !tailText.endsWith("\uFFFD")) {
      this.settled = this.current;
      this.cut = this.tokens.length;
    }
    return this.current;
  }
}
