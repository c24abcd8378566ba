/**
 * The temperature-1 probability of each sampled token, without sorting the vocabulary.
 *
 * node-llama-cpp 3.22.1 reports a sampled token's probability (`confidence`) only after sorting
 * every candidate by logit (AddonContext.cpp, SampleToken: `std::sort` over the whole vocabulary
 * whenever confidence or probabilities are asked for and the sampler chain left the candidates
 * unsorted). At a real vocabulary that sort is the most expensive thing we add to a token:
 * measured at 152k (Qwen2.5-0.5B shape, one CPU thread) ~17 ms per token on a ~32 ms token.
 * And its confidence is the post-chain probability, so it is p at temperature 1 only when the
 * chain is temperature 1 without truncation.
 *
 * What a probability needs is one pass over the logits: log p(t) = l_t − max − log Σ exp(l − max).
 * The native `totalLogitWeight` output is exactly Σ exp(l − max) (no sort), and a greedy sampler's
 * selected logit is the max. So each confidence request on a context where this is installed is
 * answered by two sort-free native calls at the same logits: the request's own sampler picks the
 * token (no metadata asked), then a greedy sampler of ours returns, for that token, its raw logit,
 * the max logit and the sum. The result is p(token) under the unmodified (temperature-1,
 * full-vocabulary) distribution, whatever the sampler chain was (temperature, top-k, min-p).
 *
 * This wraps an internal of node-llama-cpp (the context's native `sampleToken`), pinned by the
 * exact version in package.json and proven by test/inference/engine.test.ts (values against a
 * full-logits reference, and no sorting request reaching the native code). When the internals are
 * not as expected nothing is wrapped, and the engine keeps node-llama-cpp's own confidence.
 */
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";

/** AddonContext.sampleToken(batchLogitIndex, sampler, probabilities?, confidence?, logits?, totalLogitWeight?) */
type SampleTokenFn = (batchLogitIndex: number, sampler: object, ...rest: unknown[]) => Promise<unknown>;
interface AddonContextLike {
  sampleToken: SampleTokenFn;
}
interface AddonSamplerLike {
  applyConfig(config: object): void;
  dispose(): void;
}
type AddonSamplerClass = new (model: object) => AddonSamplerLike;

const installed = new WeakSet<object>();

/** The sampler config node-llama-cpp gives the native sampler (LlamaContext._resolveSamplerConfig), as far as it matters here. */
interface SamplerConfigLike {
  temperature?: number;
  tokenBiasKeys?: ArrayLike<number>;
  grammarEvaluationState?: object;
  repeatPenaltyTokens?: ArrayLike<number>;
  repeatPenalty?: number;
  repeatPenaltyPresencePenalty?: number;
  repeatPenaltyFrequencyPenalty?: number;
  dryRepeatPenaltyStrength?: number;
  xtcProbability?: number;
}

/**
 * A greedy chain that leaves the logits as they are (no bias, grammar, penalty or XTC): its
 * candidates are the raw logits and its pick is their max, so Σ exp(l − max) over them (the
 * native `totalLogitWeight`) gives the pick's temperature-1 probability, 1 / Σ, in one call.
 */
function isPlainGreedy(c: SamplerConfigLike): boolean {
  const penalised =
    (c.repeatPenaltyTokens?.length ?? 0) > 0 && ((c.repeatPenalty ?? 1) !== 1 || !!c.repeatPenaltyPresencePenalty || !!c.repeatPenaltyFrequencyPenalty);
  return (
    !((c.temperature ?? 0) > 0) &&
    !((c.tokenBiasKeys?.length ?? 0) > 0) &&
    c.grammarEvaluationState == null &&
    !penalised &&
    c.dryRepeatPenaltyStrength == null &&
    c.xtcProbability == null
  );
}

/** Per native bindings: the samplers whose last config was plain greedy (filled by the recording subclass below). */
const plainGreedyByBindings = new WeakMap<object, WeakSet<object>>();

/**
 * The native samplers of `bindings` whose last applied config is plain greedy. node-llama-cpp
 * creates one native sampler per generation (`new bindings.AddonSampler(model)`) and applies the
 * request's config to it before each token; a subclass put in the bindings' place records which
 * are plain greedy, so a confidence request for them takes one native call instead of two (the
 * chat's greedy answers: evaluateWithMetadata keeps one sampler for the whole answer, where one
 * controlledEvaluate a token built a new one each token, zeroing a candidate buffer the size of
 * the vocabulary on the JS thread). Null when the bindings cannot be wrapped.
 */
function plainGreedySamplers(bindings: { AddonSampler?: AddonSamplerClass } | undefined): WeakSet<object> | null {
  if (!bindings || typeof bindings.AddonSampler !== "function") return null;
  const known = plainGreedyByBindings.get(bindings);
  if (known) return known;
  const set = new WeakSet<object>();
  const Native = bindings.AddonSampler;
  class RecordingSampler extends Native {
    override applyConfig(config: object): void {
      if (isPlainGreedy(config)) set.add(this);
      else set.delete(this);
      return super.applyConfig(config);
    }
  }
  try {
    bindings.AddonSampler = RecordingSampler;
    if (bindings.AddonSampler !== RecordingSampler) return null;
  } catch {
    return null;
  }
  plainGreedyByBindings.set(bindings, set);
  return set;
}

/** True when `context`'s confidence requests are answered by the sort-free path (see above). */
export function hasExactTokenProbability(context: LlamaContext): boolean {
  const addon = (context as unknown as { _ctx?: object })._ctx;
  return !!addon && installed.has(addon);
}

/**
 * Log-prob of `token` from the greedy sampler's answer: logits as flat [token, logit, ...] pairs
 * (the requested token and the greedy pick, the max) and Σ exp(l − max).
 */
export function logprobFromGreedyAnswer(token: number, greedyToken: number, pairs: readonly number[], totalWeight: number): number {
  let lTok = NaN;
  let lMax = NaN;
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    if (pairs[i] === token) lTok = pairs[i + 1];
    if (pairs[i] === greedyToken) lMax = pairs[i + 1];
  }
  return lTok - lMax - Math.log(totalWeight);
}

/**
 * Feeds `feed` to `seq` (after what it holds) and returns, for each i < targets.length, the
 * temperature-1 log-prob of `targets[i]` at the position that reads `feed[i]`. Per position one
 * native pass over the logits (a greedy sampler's pick = the max logit, the target's logit,
 * Σ exp(l − max)), never the vocabulary as a JS Map: at 152k tokens that cost ~80 ms of CPU a
 * position (174 tokens took 13-15 s; this takes 0.8 s). Scoring a text (echo) and the gate's
 * fluency probe both read log-probs this way.
 */
export async function targetLogprobs(seq: LlamaContextSequence, feed: readonly Token[], targets: readonly Token[]): Promise<number[]> {
  if (targets.length > feed.length) throw new Error(`${targets.length} targets for ${feed.length} fed tokens`);
  const out = await seq.controlledEvaluate(
    feed.map((t, i) =>
      i < targets.length
        ? [
            t,
            {
              generateNext: {
                token: true,
                totalLogitWeight: true,
                logits: { filter: { tokens: [targets[i]], includeSelected: true } },
                options: { temperature: 0 },
              },
            },
          ]
        : t,
    ),
  );
  return targets.map((t, i) => {
    const next = out[i]?.next;
    const greedy = next?.token;
    if (!next?.logits || greedy === undefined || greedy === null || next.totalLogitWeight === undefined) throw new Error("the model returned no logits");
    return logprobFromGreedyAnswer(t, greedy, [...next.logits].flat(), next.totalLogitWeight);
  });
}

/**
 * Makes `context` answer confidence requests (evaluateWithMetadata with `{ confidence: true }`)
 * with the exact temperature-1 probability, without a sort. Returns false (and changes nothing)
 * when node-llama-cpp's internals are not the ones this was written against.
 */
export function installExactTokenProbability(context: LlamaContext, model: LlamaModel): boolean {
  const addon = (context as unknown as { _ctx?: AddonContextLike })._ctx;
  const m = model as unknown as { _llama?: { _bindings?: { AddonSampler?: AddonSamplerClass } }; _model?: object };
  const Sampler = m._llama?._bindings?.AddonSampler;
  const nativeModel = m._model;
  if (!addon || typeof addon.sampleToken !== "function" || typeof Sampler !== "function" || !nativeModel) return false;
  if (installed.has(addon)) return true;
  const plainGreedy = plainGreedySamplers(m._llama?._bindings);
  // Looked up on each call (not bound once), so the prototype's function is what runs.
  const native: SampleTokenFn = (...args) => (Object.getPrototypeOf(addon) as { sampleToken: SampleTokenFn }).sampleToken.apply(addon, args);

  // Greedy samplers, one per concurrent request (a sampler's candidate buffer is not shared).
  const pool: AddonSamplerLike[] = [];
  let disposed = false;
  const take = (): AddonSamplerLike => {
    const s = pool.pop();
    if (s) return s;
    const g = new Sampler(nativeModel);
    g.applyConfig({ temperature: 0 });
    return g;
  };
  const give = (s: AddonSamplerLike) => {
    if (disposed) s.dispose();
    else pool.push(s);
  };
  context.onDispose.createListener(() => {
    disposed = true;
    for (const s of pool.splice(0)) s.dispose();
  });

  const wrapped: SampleTokenFn = async (batchLogitIndex, sampler, ...rest) => {
    // Exactly evaluateWithMetadata's call for `{ confidence: true }`; everything else is untouched.
    if (!(rest.length === 2 && rest[0] === false && rest[1] === true)) return native(batchLogitIndex, sampler, ...rest);
    if (plainGreedy?.has(sampler)) {
      // One call: the request's greedy sampler picks the max of the raw logits and sums over them.
      const r = (await native(batchLogitIndex, sampler, false, false, false, true)) as [number, unknown, unknown, unknown, number];
      if (typeof r[0] !== "number" || r[0] < 0) return [r[0]];
      return [r[0], undefined, 1 / r[4]];
    }
    const token = (await native(batchLogitIndex, sampler)) as number;
    if (typeof token !== "number" || token < 0) return [token];
    const greedy = take();
    try {
      const r = (await native(batchLogitIndex, greedy, false, false, [[token], false, false, true, 0], true)) as [number, unknown, unknown, number[], number];
      const logprob = logprobFromGreedyAnswer(token, r[0], r[3] ?? [], r[4]);
      return [token, undefined, Math.exp(logprob)];
    } finally {
      give(greedy);
    }
  };
  try {
    // The native method is a read-only property of the addon's prototype: an own property shadows it.
    Object.defineProperty(addon, "sampleToken", { value: wrapped, writable: true, configurable: true, enumerable: false });
  } catch {
    return false;
  }
  installed.add(addon);
  return true;
}
