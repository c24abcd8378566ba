import type { Engine } from "../inference/engine.js";
import { FluencyProbe } from "../inference/fluencyProbe.js";
import { defaultThreads } from "../inference/threads.js";

/**
 * The publish gate's fluency probe for the served model: the same GGUF in a LlamaModel instance
 * of its own (mmapped: the weights' pages are shared with the engine's on the CPU), with GPU
 * layers fitted to what is left where the engine uses a GPU, and waiting whenever chat has a
 * request in flight or queued, as the judge does.
 */
export function gateProbeFor(engine: Engine, threads?: number): FluencyProbe {
  const info = engine.info();
  return new FluencyProbe({
    llama: engine.llama,
    modelPath: info.modelPath,
    gpuLayers: info.gpuLayers === 0 ? 0 : "auto",
    // As the engine chooses them: one thread for a small model (threads.ts), else all math cores.
    threads: threads ?? defaultThreads(engine.model.size),
    maxContextSize: Math.min(info.contextSize, 2048),
    busy: () => engine.gate.inflight + engine.gate.queued > 0,
  });
}
