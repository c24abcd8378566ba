import type { Engine } from "../inference/engine.js";
import type { JudgeSource } from "../api/settings.js";
import { EndpointJudgeBackend, JudgeUnavailableError, LocalJudgeBackend, type JudgeBackend } from "./backends.js";
import type { BackendFactory } from "./service.js";

export interface JudgeSourceOptions {
  /** CPU threads for a local judge's context (default: the engine's default) */
  threads?: number;
  /** judge context cap in tokens (default 4096) */
  maxContextSize?: number;
}

/**
 * Builds the judge the settings ask for: "base" = the served model without its adapter in a
 * separate context that waits while chat generates; "gguf" = another local model (loaded on
 * the engine's runtime); "endpoint" = an OpenAI-compatible URL + key.
 */
export function judgeBackendFactory(engine: Engine | null, opts: JudgeSourceOptions = {}): BackendFactory {
  return async (source: JudgeSource, votes: number): Promise<JudgeBackend> => {
    const busy = engine ? () => engine.gate.inflight + engine.gate.queued > 0 : undefined;
    const local = { parallel: votes, threads: opts.threads, maxContextSize: opts.maxContextSize, busy };
    switch (source.kind) {
      case "base":
        if (!engine) throw new JudgeUnavailableError("the judge's source is the served model, and no model is loaded");
        return LocalJudgeBackend.onModel(`base:${engine.modelId}`, engine.model, engine.wrapper, local);
      case "gguf":
        if (!engine) throw new JudgeUnavailableError("a GGUF judge needs the inference runtime, and no model is loaded");
        return LocalJudgeBackend.load(engine.llama, source.path, local);
      case "endpoint":
        return new EndpointJudgeBackend({ baseUrl: source.baseUrl, model: source.model, apiKey: source.apiKey });
    }
  };
}
