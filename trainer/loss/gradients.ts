import { createRequire } from "node:module";
import { register as registerTsxCjs } from "tsx/cjs/api";

/**
 * tfjs-core registers no gradient kernels by itself (the @tensorflow/tfjs union package
 * imports `dist/register_all_gradients`). That file is ESM with extensionless relative
 * imports, which neither Node's ESM loader nor plain require accept; tsx's require (the
 * loader every entry point already uses) transpiles it. Registries and the engine live on
 * globalThis, so this registers the gradients for the tfjs-core instance every module
 * imports. Idempotent; ~2 s on a cold tsx cache, then little.
 */
let done = false;
export function registerGradients(): void {
  if (done) return;
  // tsx's CommonJS hook (the ESM hook alone, as bin/clawrl registers, resolves no
  // extensionless imports in node_modules); unregistered again right after.
  const unregister = registerTsxCjs();
  try {
    createRequire(import.meta.url)("@tensorflow/tfjs-core/dist/register_all_gradients.js");
  } finally {
    unregister();
  }
  done = true;
}
registerGradients();
