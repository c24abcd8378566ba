import { LOAD_BACKENDS, type LoadBackend } from "../api/modelLoad.js";

/**
 * Which compute backend serves: auto = CUDA, then Vulkan, then CPU (Metal, then CPU, on a Mac);
 * a named GPU backend falls back to the CPU. Each GPU backend is proven in a child process
 * before the core uses it (backendProbe.ts). Only prebuilt binaries are used: nothing is
 * compiled or downloaded at run time. The names are node-llama-cpp's (api/modelLoad.ts: the
 * load settings and `clawrl serve --gpu` take the same).
 */
export type BackendPreference = LoadBackend;
export type BackendName = "cuda" | "vulkan" | "metal" | "cpu";

export const BACKEND_PREFERENCES: readonly BackendPreference[] = LOAD_BACKENDS;
