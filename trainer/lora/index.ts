/** LoRA parameters and their GGUF adapter files (llama.cpp format). */
export * from "./params.js";
export { readLoraAdapter, writeLoraAdapter } from "./adapter-file.js";
