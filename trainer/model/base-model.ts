/**
 * A frozen base model loaded from GGUF for training: config + f32 weights on the active tfjs
 * backend (call initBackend() from ../backend.js first).
 */
import { readGguf } from "../gguf/reader.js";
import type { ActivationRounding } from "./activation-rounding.js";
import { readModelConfig, type Arch, type ModelConfig } from "./config.js";
import { disposeWeights, loadWeights, type ModelWeights } from "./weights.js";

export interface BaseModel {
  path: string;
  arch: Arch;
  config: ModelConfig;
  weights: ModelWeights;
  /**
   * "llama.cpp-cpu" rounds each matmul's activations as llama.cpp's CPU backend does for the
   * weight's type (see activation-rounding.ts); "none" (default) computes in f32.
   */
  activationRounding: ActivationRounding;
  /** Frees the weight tensors; the model is unusable afterwards. */
  dispose(): void;
}

export async function loadBaseModel(ggufPath: string): Promise<BaseModel> {
  const file = readGguf(ggufPath);
  const config = readModelConfig(file);
  const weights = loadWeights(file, config);
  let disposed = false;
  return {
    path: ggufPath,
    arch: config.arch,
    config,
    weights,
    activationRounding: "none",
    dispose() {
      if (disposed) return;
      disposed = true;
      disposeWeights(weights);
    },
  };
}
