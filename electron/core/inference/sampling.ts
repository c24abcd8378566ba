/**
 * Token sampling in JS from the model's raw logits. We sample ourselves (rather than in
 * node-llama-cpp's native sampler) because the trajectory must record log p(token) under the
 * temperature-1 distribution, and the native sampler only reports probabilities after its own
 * temperature / top-p transforms.
 */

/** Small seeded PRNG (mulberry32): deterministic per seed, uniform in [0, 1). */
export function createRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SampleOptions {
  /** 0 = greedy. */
  temperature: number;
  /** Nucleus mass in (0, 1]. */
  topP: number;
  rng: () => number;
  /** Only these tokens may be chosen (constrained decoding); undefined = any. */
  allowed?: (token: number) => boolean;
  /** How many alternatives (by temperature-1 log-prob) to report; 0 = none. */
  topLogprobs?: number;
  /** What reshapes the sampled distribution beyond temperature and top-p (llama.cpp's samplers, in its order). */
  adjust?: SamplingAdjustments;
}

/**
 * The request's logit bias and penalties, top-k and min-p, applied as llama.cpp's sampler chain
 * applies them (logit bias, penalties, then top-k, top-p, min-p, temperature). They change which
 * token is picked, never the log-prob reported (the temperature-1 one of the raw logits).
 */
export interface SamplingAdjustments {
  /** Added to a token's logit; -Infinity bans it. Called per token (it may change as the answer grows). */
  bias?: () => ReadonlyMap<number, number> | undefined;
  /** llama.cpp's penalties over `history()` (the answer's last tokens). */
  penalties?: Penalties;
  /** Keep the k most likely tokens; 0 = off. */
  topK?: number;
  /** Drop tokens less likely than minP × the most likely one; 0 = off. */
  minP?: number;
}

export interface Penalties {
  /** Divides a positive logit, multiplies a negative one, of a token seen (1 = off). */
  repeat: number;
  /** Subtracted once per occurrence. */
  frequency: number;
  /** Subtracted once if the token occurred. */
  presence: number;
  history: () => readonly number[];
}

/** llama.cpp's llama_sampler_penalties: the logit of each token seen in `history`, changed by how often it was. */
export function applyPenalties(logit: number, count: number, p: Penalties): number {
  if (count <= 0) return logit;
  let l = p.repeat !== 1 ? (logit <= 0 ? logit * p.repeat : logit / p.repeat) : logit;
  l -= count * p.frequency + p.presence;
  return l;
}

export interface SampledToken {
  token: number;
  /** log p(token) under the unmodified (temperature-1, full-vocabulary) distribution. */
  logprob: number;
  top: Array<{ token: number; logprob: number }>;
  /** How many tokens were allowed here (1: the constraint chose, not the model). */
  choices: number;
}

/** Log-softmax normaliser: max and log Σ exp(l − max) over every logit. */
function logNormaliser(logits: Float64Array, n: number): number {
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[i] - max);
  return max + Math.log(sum);
}

/**
 * Picks the next token from `logits` (token → raw logit, as node-llama-cpp returns them).
 * The log-prob reported is always the temperature-1 one, whatever the sampling settings.
 */
export function sampleToken(logits: ReadonlyMap<number, number>, opts: SampleOptions): SampledToken {
  const n = logits.size;
  const tokens = new Int32Array(n);
  const values = new Float64Array(n);
  let i = 0;
  for (const [t, l] of logits) {
    tokens[i] = t;
    values[i] = l;
    i++;
  }
  const logZ = logNormaliser(values, n);
  // What is sampled from: the raw logits reshaped by the request's bias and penalties.
  const scores = opts.adjust?.bias || opts.adjust?.penalties ? adjusted(tokens, values, opts.adjust) : values;

  // Candidate set: allowed tokens, sorted by logit (descending) for top-p and greedy.
  const order: number[] = [];
  for (let k = 0; k < n; k++) if (!opts.allowed || opts.allowed(tokens[k])) order.push(k);
  if (order.length === 0) throw new Error("no token is allowed at this position");
  order.sort((x, y) => scores[y] - scores[x]);
  let kept = order.filter((k) => scores[k] > -Infinity);
  if (kept.length === 0) kept = order; // everything banned: the bias gives way rather than the answer failing
  const topK = opts.adjust?.topK ?? 0;
  if (topK > 0 && kept.length > topK) kept = kept.slice(0, topK);

  let chosen: number;
  if (opts.temperature <= 0) {
    chosen = kept[0];
  } else {
    const t = opts.temperature;
    const top = scores[kept[0]];
    const minP = opts.adjust?.minP ?? 0;
    // min-p on the temperature-1 probabilities (llama.cpp applies it before the temperature).
    if (minP > 0) kept = kept.filter((k) => scores[k] - top >= Math.log(minP));
    const w = kept.map((k) => Math.exp((scores[k] - top) / t));
    let total = w.reduce((a, b) => a + b, 0);
    let keep = w.length;
    if (opts.topP < 1) {
      let acc = 0;
      for (let k = 0; k < w.length; k++) {
        acc += w[k] / total;
        if (acc >= opts.topP) {
          keep = k + 1;
          break;
        }
      }
      total = 0;
      for (let k = 0; k < keep; k++) total += w[k];
    }
    let r = opts.rng() * total;
    chosen = kept[keep - 1];
    for (let k = 0; k < keep; k++) {
      r -= w[k];
      if (r < 0) {
        chosen = kept[k];
        break;
      }
    }
  }

  const top: Array<{ token: number; logprob: number }> = [];
  const wantTop = Math.min(opts.topLogprobs ?? 0, n);
  if (wantTop > 0) {
    // Alternatives over the whole vocabulary (not only the allowed set), as OpenAI reports them.
    const all = order.length === n && scores === values ? order : Array.from({ length: n }, (_, k) => k).sort((x, y) => values[y] - values[x]);
    for (let k = 0; k < wantTop; k++) top.push({ token: tokens[all[k]], logprob: values[all[k]] - logZ });
  }
  return { token: tokens[chosen], logprob: values[chosen] - logZ, top, choices: order.length };
}

function adjusted(tokens: Int32Array, values: Float64Array, adjust: SamplingAdjustments): Float64Array {
  const out = Float64Array.from(values);
  const bias = adjust.bias?.();
  const p = adjust.penalties;
  const counts = new Map<number, number>();
  if (p) for (const t of p.history()) counts.set(t, (counts.get(t) ?? 0) + 1);
  if ((!bias || bias.size === 0) && counts.size === 0) return values;
  for (let i = 0; i < tokens.length; i++) {
    const b = bias?.get(tokens[i]);
    if (b !== undefined) out[i] += b;
    const c = counts.get(tokens[i]);
    if (c !== undefined && p) out[i] = applyPenalties(out[i], c, p);
  }
  return out;
}

/** Log-prob of a given (forced) token under the temperature-1 distribution. */
export function tokenLogprob(logits: ReadonlyMap<number, number>, token: number): number {
  let max = -Infinity;
  for (const l of logits.values()) if (l > max) max = l;
  let sum = 0;
  for (const l of logits.values()) sum += Math.exp(l - max);
  const l = logits.get(token);
  return l === undefined ? -Infinity : l - max - Math.log(sum);
}
