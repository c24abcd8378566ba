/** The trainer's model API: load a frozen GGUF base model and score tokens (with optional LoRA). */
export { loadBaseModel, type BaseModel } from "./base-model.js";
export { readModelConfig, SUPPORTED_ARCHS, type Arch, type ModelConfig } from "../../models/arch/config.js";
export { outputLogits, tokenLogProbs, type TokenBatch, type TokenLogProbs, type TokenLogProbsOptions } from "./logprobs.js";
export { hiddenStates, rmsNorm } from "./forward.js";
export { LINEAR_NAMES, linearShape, type LinearName } from "./weights.js";
