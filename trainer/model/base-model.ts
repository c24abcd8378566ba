/**
 * A frozen base model loaded from GGUF for training: config + weights placed on the active
 * tfjs backend or streamed from the host (call initBackend() from ../backend.js first).
 */
import { readGguf } from "../../models/gguf/reader.js";
import type { ActivationRounding } from "./activation-rounding.js";
import { readModelConfig, type Arch, type ModelConfig } from "../../models/arch/config.js";
import { FrozenBase, type WeightPlacement } from "./weights.js";

export interface BaseModel {
  path: string;
  arch: Arch;
  config: ModelConfig;
  weights: FrozenBase;
  /**
   * "llama.cpp-cpu" rounds each matmul's activations as llama.cpp's CPU backend does for the
   * weight's type (see activation-rounding.ts); "none" (default) computes in f32.
   */
  activationRounding: ActivationRounding;
  /** Frees the weight tensors; the model is unusable afterwards. */
  dispose(): void;
}

export interface LoadOptions {
  /** Where the weights live; default everything on the backend (see weights.ts). */
  placement?: WeightPlacement;
  /** Rows of the output projection per head slice (tests use small ones). */
  headChunkRows?: number;
  /**
   * Streamed weights go to the native products as host matrices (default: where the addon
   * loaded and the backend is wasm or cpu; false keeps the backend's products: comparisons).
   */
  hostProducts?: boolean;
}

export const ALL_ON_DEVICE: WeightPlacement = { layers: "device", head: "device" };

export async function loadBaseModel(ggufPath: string, opts: LoadOptions = {}): Promise<BaseModel> {
  const file = readGguf(ggufPath);
  const config = readModelConfig(file);
  const weights = new FrozenBase(file, config, opts.placement ?? ALL_ON_DEVICE, opts.headChunkRows, opts.hostProducts);
  return {
    path: ggufPath,
    arch: config.arch,
    config,
    weights,
    activationRounding: "none",
    dispose() {
      weights.dispose();
    },
  };
}
