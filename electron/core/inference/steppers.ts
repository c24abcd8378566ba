import type {
  ControlledEvaluateInputItem,
  LlamaContextSequence,
  LlamaContextSequenceRepeatPenalty,
  LlamaGrammarEvaluationState,
  Token,
  TokenBias,
} from "node-llama-cpp";
import { sampleToken, tokenLogprob, type SampleOptions } from "./sampling.js";
import { hasExactTokenProbability } from "./tokenProbability.js";

/** One generated token with its temperature-1 log-prob (and alternatives when asked). */
export interface Step {
  token: number;
  logprob: number;
  top: Array<{ token: number; logprob: number }>;
  /** How many tokens were allowed (JS sampling only; 1 = forced or the only one a constraint allows). */
  choices?: number;
}

/** Produces the answer's tokens one at a time; the caller feeds nothing back (each step's token is kept). */
export interface Stepper {
  next(): Promise<Step>;
  /**
   * Starts evaluating the last returned token now, so the model computes the next step while
   * the caller streams this one (the caller calls it only when it will ask for another token).
   */
  prefetch(): void;
  close(): Promise<void>;
}

/**
 * No top-k sampler in node-llama-cpp's chain: `topK: 0` means top-k over the whole vocabulary,
 * which sorts every candidate each token (~8 ms at a 152k vocabulary on one CPU thread), and
 * leaving it out means node-llama-cpp's default of 40. `null` is dropped from the sampler config
 * (removeNullFields), so no top-k sampler is built: the full distribution, nothing sorted.
 */
const NO_TOP_K = null as unknown as number;

/** What llama.cpp's sampler chain adds for a request (the confidence stays p at temperature 1: tokenProbability.ts). */
export interface NativeSamplerExtras {
  /** Holds the answer to a grammar; the sampler advances it with each token it picks. */
  grammar?: LlamaGrammarEvaluationState;
  repeatPenalty?: LlamaContextSequenceRepeatPenalty;
  /** Read before each token (the bias may change as the answer grows). */
  tokenBias?: () => TokenBias;
  topK?: number;
  minP?: number;
}

/**
 * node-llama-cpp's own generation loop (`evaluateWithMetadata`), used when its confidence is the
 * temperature-1 probability of the sampled token: any temperature and top-p where
 * tokenProbability.ts is installed, temperature 1 without top-p otherwise. No top-k sampler.
 * Nothing but the token and one number cross into JS per step. (Greedy: GreedyStepper.)
 */
export class NativeStepper implements Stepper {
  private readonly it: AsyncGenerator<{ token: Token; confidence: number }, void, void | Token | Token[]>;
  private ahead: Promise<IteratorResult<{ token: Token; confidence: number }, void>> | null = null;

  constructor(seq: LlamaContextSequence, input: Token[], temperature: number, topP: number, seed: number, extra: NativeSamplerExtras = {}) {
    this.it = seq.evaluateWithMetadata(
      input,
      { confidence: true },
      {
        temperature,
        topK: extra.topK && extra.topK > 0 ? extra.topK : NO_TOP_K,
        topP,
        minP: extra.minP ?? 0,
        seed,
        yieldEogToken: true,
        grammarEvaluationState: extra.grammar,
        repeatPenalty: extra.repeatPenalty,
        tokenBias: extra.tokenBias,
      },
    );
  }

  async next(): Promise<Step> {
    const r = await (this.ahead ?? this.it.next());
    this.ahead = null;
    if (r.done) throw new Error("generation ended without a token");
    return { token: r.value.token, logprob: Math.log(r.value.confidence), top: [] };
  }

  prefetch(): void {
    this.ahead ??= this.it.next();
  }

  async close(): Promise<void> {
    if (this.ahead) await this.ahead.catch(() => undefined);
    this.ahead = null;
    await this.it.return();
  }
}

/**
 * A stepper that evaluates through `controlledEvaluate`, one call a token: what it keeps between
 * steps (the tokens to feed next, the evaluation started ahead) is the same for each; only what
 * a call asks for and how a step is read from its answer differ.
 */
abstract class ControlledStepper<Answer> implements Stepper {
  private pending: Token[];
  private ahead: Promise<Answer> | null = null;

  constructor(
    protected readonly seq: LlamaContextSequence,
    input: Token[],
  ) {
    this.pending = input;
  }

  /** Feeds `tokens` after what the sequence holds, asking for what the next step needs at the last one. */
  protected abstract evaluate(tokens: Token[]): Promise<Answer>;
  /** The step from an evaluation's answer. */
  protected abstract step(answer: Answer): Step;

  prefetch(): void {
    this.ahead ??= this.evaluate(this.pending);
  }

  async next(): Promise<Step> {
    const answer = await (this.ahead ?? this.evaluate(this.pending));
    this.ahead = null;
    const step = this.step(answer);
    this.pending = [step.token as Token];
    return step;
  }

  async close(): Promise<void> {
    if (this.ahead) await this.ahead.catch(() => undefined);
    this.ahead = null;
  }
}

/**
 * Greedy generation in one native call a token: the greedy pick and Σ exp(l − max) over the raw
 * logits (node-llama-cpp's `totalLogitWeight`, no sort). The pick is the max, so its
 * temperature-1 probability is 1 / Σ. Where tokenProbability.ts is installed, node-llama-cpp's
 * own loop does it (a NativeStepper at temperature 0: one native sampler for the whole answer,
 * and tokenProbability.ts answers a plain greedy sampler's confidence in that one call); else one
 * `controlledEvaluate` a token, which builds a native sampler each token (a candidate buffer the
 * size of the vocabulary zeroed on the JS thread: ~0.6 ms a token at 152k, the server's JS time
 * over direct's in bench/server-vs-direct.ts).
 */
export class GreedyStepper implements Stepper {
  private readonly inner: Stepper;

  constructor(seq: LlamaContextSequence, input: Token[]) {
    this.inner = hasExactTokenProbability(seq.context) ? new NativeStepper(seq, input, 0, 1, 0) : new ControlledGreedyStepper(seq, input);
  }

  next(): Promise<Step> {
    return this.inner.next();
  }

  prefetch(): void {
    this.inner.prefetch();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** GreedyStepper through `controlledEvaluate`, one call a token (where tokenProbability.ts is not installed). */
class ControlledGreedyStepper extends ControlledStepper<Step> {
  protected async evaluate(tokens: Token[]): Promise<Step> {
    const last = tokens.length - 1;
    const input: ControlledEvaluateInputItem[] = tokens.map((t, i) =>
      i === last ? [t, { generateNext: { token: true, totalLogitWeight: true, options: { temperature: 0 } } }] : t,
    );
    const next = (await this.seq.controlledEvaluate(input))[last]?.next;
    if (next?.token === undefined || next.token === null || next.totalLogitWeight === undefined) throw new Error("the model returned no token");
    return { token: next.token, logprob: -Math.log(next.totalLogitWeight), top: [] };
  }

  protected step(answer: Step): Step {
    return answer;
  }
}

export interface LogitsStepperOptions extends SampleOptions {
  /** A token that must come next (forced syntax), or null/undefined to sample. */
  forced?: () => number | null | undefined;
}

/**
 * Generation that samples in JS from the full raw logits of each position (one
 * `controlledEvaluate` per token): exact temperature-1 log-probs under any sampling settings,
 * top log-probs, seeded sampling, forced and constrained tokens.
 */
export class LogitsStepper extends ControlledStepper<ReadonlyMap<number, number>> {
  constructor(
    seq: LlamaContextSequence,
    input: Token[],
    private readonly opts: LogitsStepperOptions,
  ) {
    super(seq, input);
  }

  protected async evaluate(tokens: Token[]): Promise<ReadonlyMap<number, number>> {
    const last = tokens.length - 1;
    // No sampling options: node-llama-cpp's greedy chain leaves the full raw logits untouched.
    const input: ControlledEvaluateInputItem[] = tokens.map((t, i) => (i === last ? [t, { generateNext: { logits: true } }] : t));
    const out = await this.seq.controlledEvaluate(input);
    const logits = out[last]?.next.logits;
    if (!logits) throw new Error("the model returned no logits");
    return logits;
  }

  protected step(logits: ReadonlyMap<number, number>): Step {
    const forced = this.opts.forced?.();
    if (forced !== undefined && forced !== null) return { token: forced, logprob: tokenLogprob(logits, forced), top: [], choices: 1 };
    return sampleToken(logits, this.opts);
  }
}
