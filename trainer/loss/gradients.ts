import { createRequire } from "node:module";

/**
 * tfjs-core registers no gradient kernels by itself (the @tensorflow/tfjs union package
 * imports `dist/register_all_gradients`). Its ESM build uses directory imports that Node's ESM
 * loader refuses, so it is loaded through require (tsx's CJS hook transpiles it). The
 * registry is global (globalThis), so this registers the gradients for the tfjs-core instance
 * every module imports. Idempotent; costs ~2 s on a cold tsx cache, then little.
 */
let done = false;
export function registerGradients(): void {
  if (done) return;
  createRequire(import.meta.url)("@tensorflow/tfjs-core/dist/register_all_gradients.js");
  done = true;
}
registerGradients();
