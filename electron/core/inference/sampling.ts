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
}

export interface SampledToken {
  token: number;
  /** log p(token) under the unmodified (temperature-1, full-vocabulary) distribution. */
  logprob: number;
  top: Array<{ token: number; logprob: number }>;
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

  // Candidate set: allowed tokens, sorted by logit (descending) for top-p and greedy.
  const order: number[] = [];
  for (let k = 0; k < n; k++) if (!opts.allowed || opts.allowed(tokens[k])) order.push(k);
  if (order.length === 0) throw new Error("no token is allowed at this position");
  order.sort((x, y) => values[y] - values[x]);

  let chosen: number;
  if (opts.temperature <= 0) {
    chosen = order[0];
  } else {
    const t = opts.temperature;
    const top = values[order[0]];
    const w = order.map((k) => Math.exp((values[k] - top) / t));
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
    chosen = order[keep - 1];
    for (let k = 0; k < keep; k++) {
      r -= w[k];
      if (r < 0) {
        chosen = order[k];
        break;
      }
    }
  }

  const top: Array<{ token: number; logprob: number }> = [];
  const wantTop = Math.min(opts.topLogprobs ?? 0, n);
  if (wantTop > 0) {
    // Alternatives over the whole vocabulary (not only the allowed set), as OpenAI reports them.
    const all = order.length === n ? order : Array.from({ length: n }, (_, k) => k).sort((x, y) => values[y] - values[x]);
    for (let k = 0; k < wantTop; k++) top.push({ token: tokens[all[k]], logprob: values[all[k]] - logZ });
  }
  return { token: tokens[chosen], logprob: values[chosen] - logZ, top };
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
