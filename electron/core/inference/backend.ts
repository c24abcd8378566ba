/**
 * Which compute backend serves: auto = CUDA, then Vulkan, then CPU (Metal, then CPU, on a Mac);
 * a named GPU backend falls back to the CPU. Each GPU backend is proven in a child process
 * before the core uses it (backendProbe.ts). Only prebuilt binaries are used: nothing is
 * compiled or downloaded at run time.
 */
export type BackendPreference = "auto" | "cuda" | "vulkan" | "cpu";
export type BackendName = "cuda" | "vulkan" | "metal" | "cpu";

export const BACKEND_PREFERENCES: readonly BackendPreference[] = ["auto", "cuda", "vulkan", "cpu"];
