import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";

/** Which compute backend to use: auto = CUDA, then Vulkan, then CPU. */
export type BackendPreference = "auto" | "cuda" | "vulkan" | "cpu";
export type BackendName = "cuda" | "vulkan" | "metal" | "cpu";

export interface LoadedBackend {
  llama: Llama;
  backend: BackendName;
  /** Why a preferred backend was skipped, one line each (empty when the first choice worked). */
  skipped: string[];
}

const order: Record<BackendPreference, Array<"cuda" | "vulkan" | false>> = {
  auto: ["cuda", "vulkan", false],
  cuda: ["cuda"],
  vulkan: ["vulkan"],
  cpu: [false],
};

/**
 * Loads llama.cpp's bindings with the preferred backend. `build: "never"` and `skipDownload`:
 * nothing is compiled or downloaded at run time; only prebuilt binaries are tried.
 */
export async function loadBackend(pref: BackendPreference = "auto"): Promise<LoadedBackend> {
  const skipped: string[] = [];
  for (const gpu of order[pref]) {
    try {
      const llama = await getLlama({ gpu, build: "never", skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.error });
      const backend: BackendName = llama.gpu === false ? "cpu" : llama.gpu;
      if (gpu !== false && llama.gpu !== gpu) {
        skipped.push(`${gpu}: got ${backend} instead`);
        await llama.dispose();
        continue;
      }
      return { llama, backend, skipped };
    } catch (err) {
      skipped.push(`${gpu === false ? "cpu" : gpu}: ${(err as Error).message.split("\n")[0]}`);
    }
  }
  throw new Error(`no usable llama.cpp backend (${skipped.join("; ")})`);
}
