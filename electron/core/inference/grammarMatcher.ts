/**
 * A grammar followed token by token from JS, for the answers sampled in JS (LogitsStepper: top
 * log-probs, forced tool calls). llama.cpp's sampler applies a grammar itself (NativeStepper);
 * here each candidate is asked of the grammar and the picked token fed to it.
 *
 * Uses two static natives of node-llama-cpp 3.22.1's AddonSampler (what its own LlamaChat and
 * draft predictor call through LlamaSampler's internal helpers), pinned by the exact version
 * in package.json and proven by test/inference/structured.test.ts.
 */
import { LlamaGrammarEvaluationState, type Llama, type LlamaGrammar, type LlamaModel, type Token } from "node-llama-cpp";

interface AddonSamplerStatics {
  canBeNextTokenForGrammarEvaluationState(state: object, token: number): boolean;
  acceptGrammarEvaluationStateToken(state: object, token: number): void;
}

function statics(llama: Llama): AddonSamplerStatics {
  const s = (llama as unknown as { _bindings?: { AddonSampler?: Partial<AddonSamplerStatics> } })._bindings?.AddonSampler;
  if (typeof s?.canBeNextTokenForGrammarEvaluationState !== "function" || typeof s.acceptGrammarEvaluationStateToken !== "function")
    throw new Error("this node-llama-cpp build has no grammar natives (AddonSampler.canBeNextTokenForGrammarEvaluationState)");
  return s as AddonSamplerStatics;
}

export class GrammarMatcher {
  readonly state: LlamaGrammarEvaluationState;
  private readonly natives: AddonSamplerStatics;
  /** Per position: tokens already asked (a full-vocabulary pass asks each once). */
  private answers = new Map<number, boolean>();

  constructor(
    private readonly model: LlamaModel,
    grammar: LlamaGrammar,
  ) {
    this.state = new LlamaGrammarEvaluationState({ model, grammar });
    this.natives = statics((model as unknown as { _llama: Llama })._llama);
  }

  private get native(): object {
    return (this.state as unknown as { _state: object })._state;
  }

  /** Whether `token` may come next (an end-of-generation token only where the grammar is complete). */
  allows(token: number): boolean {
    let a = this.answers.get(token);
    if (a === undefined) {
      a = this.natives.canBeNextTokenForGrammarEvaluationState(this.native, token);
      this.answers.set(token, a);
    }
    return a;
  }

  /** Feeds the picked token (end-of-generation tokens are not fed, as llama.cpp's sampler does). */
  accept(token: number): void {
    this.answers = new Map();
    if (this.model.isEogToken(token as Token)) return;
    this.natives.acceptGrammarEvaluationStateToken(this.native, token);
  }
}
