/**
 * Verdicts on whether a model trains on this machine (models/trainability.ts makes them from the
 * trainer's memory plan), and what reads them: the trainer's own plan for the served model, the
 * backend it reported, the words the CLI prints. Free of tfjs (the plan's module is not: its
 * weight shapes live beside the tfjs weight code), so the core and the CLI can import this at
 * start and load the planning itself only when they plan.
 */
import { backendMemory, usableWasmHeap, WASM_HEAP_MAX_BYTES } from "./plan/available.js";
import type { BackendMemory, MemoryPlan } from "./plan/memoryPlan.js";
import type { MemoryPlanSummary } from "./plan/planSummary.js";

/** The backend every machine has: tfjs-backend-wasm, whose heap stops at 4 GiB (the plan fills 85% of it). */
export const WASM_BACKEND: BackendMemory = { name: "wasm", deviceBytes: usableWasmHeap(WASM_HEAP_MAX_BYTES), sharesHostMemory: true };

/**
 * The training context the app asks for by default: settings.maxTrainContext is null until a
 * user sets it, and the supervisor then asks the trainer for 1024 tokens
 * (electron/core/training/supervisor.ts). `clawrl train` asks for 2048 (its --max-context).
 */
export const APP_TRAIN_CONTEXT = 1024;

export interface Trainability {
  fits: boolean;
  /** tfjs backend the verdict is for. */
  backend: string;
  /** Longest context a sample keeps (0 when it does not fit). */
  maxContext: number;
  /** One line: where the weights live and what it needs, or why it cannot train. */
  summary: string;
  /**
   * Why it cannot train: "memory" (too large for this machine on this backend), "architecture"
   * (the trainer does not support it: serve only); null when it fits.
   */
  limit: "memory" | "architecture" | null;
  /** Where the frozen weights live: all on the backend, or (some) streamed from RAM per block / vocabulary slice. */
  weights: "resident" | "streamed" | null;
  /** What training needs and what there is (null for a model the trainer cannot read). */
  needDeviceBytes: number | null;
  /** Undefined backend memory (a GPU that does not say): null. */
  availableDeviceBytes: number | null;
  needHostBytes: number | null;
  availableHostBytes: number | null;
}

/** A plan (the trainer's MemoryPlan, or its summary in /api/status) as a verdict. */
export function verdictOfPlan(
  plan: Pick<MemoryPlan, "fits" | "placement" | "maxContext" | "needDeviceBytes" | "availableDeviceBytes" | "needHostBytes" | "availableHostBytes">,
  backend: string,
  summary: string,
): Trainability {
  return {
    fits: plan.fits,
    backend,
    maxContext: plan.fits ? plan.maxContext : 0,
    summary,
    limit: plan.fits ? null : "memory",
    weights: plan.placement.layers === "device" && plan.placement.head === "device" ? "resident" : "streamed",
    needDeviceBytes: plan.needDeviceBytes,
    availableDeviceBytes: plan.availableDeviceBytes ?? null,
    needHostBytes: plan.needHostBytes,
    availableHostBytes: plan.availableHostBytes,
  };
}

/** The verdict of the plan the trainer itself made for the served model (/api/status training.memory). */
export function trainabilityOfPlan(plan: MemoryPlanSummary): Trainability {
  return verdictOfPlan(plan, plan.backend, plan.summary);
}

/** A model the trainer cannot train at all (its architecture): it can still be served. */
export function serveOnly(architecture: string, backend = WASM_BACKEND.name): Trainability {
  return {
    fits: false,
    backend,
    maxContext: 0,
    summary: `the trainer does not support architecture ${architecture} (it supports llama, qwen2, qwen3): serve only`,
    limit: "architecture",
    weights: null,
    needDeviceBytes: null,
    availableDeviceBytes: null,
    needHostBytes: null,
    availableHostBytes: null,
  };
}

/**
 * The memory facts of the backend the trainer reported (/api/status training: backend, device,
 * and the plan's available backend memory), for planning other models on the same backend;
 * wasm when the trainer has not started yet. Approximate where the trainer's report is short:
 * a WebGPU adapter's largest buffer is not in it (no limit is assumed).
 */
export function backendOfStatus(
  st: { backend: string | null; device: string | null; memory: Pick<MemoryPlanSummary, "availableDeviceBytes"> | null } | null | undefined,
): BackendMemory {
  if (!st?.backend) return WASM_BACKEND;
  const device = st.device ?? "";
  const reported = st.memory?.availableDeviceBytes;
  // The plan's available backend memory is already what the plan may fill (for wasm, the usable part of its heap).
  if (st.backend === "wasm") return reported === undefined ? WASM_BACKEND : { ...WASM_BACKEND, deviceBytes: reported };
  const b = backendMemory({ name: st.backend, device });
  const known = reported === undefined ? b : { ...b, deviceBytes: reported };
  // "webgpu (SwiftShader, software)": a software adapter's buffers are RAM.
  return st.backend === "webgpu" && /\bsoftware\)$/.test(device) ? { ...known, sharesHostMemory: true } : known;
}

/** Whether the trainer reported a GPU (tfjs-node-gpu's "cuda", webgpu on a hardware adapter). */
export function trainerOnGpu(st: { backend: string | null; device: string | null } | null | undefined): boolean {
  if (!st?.backend) return false;
  return st.device === "cuda" || (st.backend === "webgpu" && !/\bsoftware\)$/.test(st.device ?? ""));
}

const GiB = 2 ** 30;
/** "9.1 GiB" or "0.4 GiB": one decimal, as the CLI aligns them. */
const gib = (n: number) => `${(n / GiB).toFixed(1)} GiB`;

/** What is short, when memory is: "needs 9.2 GiB wasm memory, 4.0 available" or the same for RAM, whichever is shorter by more. */
export function shortfall(t: Trainability): string | null {
  if (t.limit !== "memory") return null;
  const short: Array<{ ratio: number; text: string }> = [];
  if (t.needDeviceBytes !== null && t.availableDeviceBytes !== null && t.needDeviceBytes > t.availableDeviceBytes) {
    short.push({
      ratio: t.needDeviceBytes / Math.max(1, t.availableDeviceBytes),
      text: `needs ${gib(t.needDeviceBytes)} ${t.backend} memory, ${(t.availableDeviceBytes / GiB).toFixed(1)} available`,
    });
  }
  if (t.needHostBytes !== null && t.availableHostBytes !== null && t.needHostBytes > t.availableHostBytes) {
    short.push({
      ratio: t.needHostBytes / Math.max(1, t.availableHostBytes),
      text: `needs ${gib(t.needHostBytes)} RAM, ${(t.availableHostBytes / GiB).toFixed(1)} available`,
    });
  }
  return short.sort((a, b) => b.ratio - a.ratio)[0]?.text ?? "needs more memory than there is";
}

/**
 * One short phrase for `clawrl models list`: "trains: yes (wasm, streamed, ctx 1024)",
 * "trains: no (needs 9.1 GiB RAM, 6.0 available)", "serve-only (architecture phi3)";
 * "trains: ?" when the file could not be read.
 */
export function trainabilityPhrase(t: Trainability | null, architecture?: string): string {
  if (!t) return "trains: ?";
  if (t.limit === "architecture") return `serve-only (architecture ${architecture ?? "unsupported"})`;
  if (!t.fits) return `trains: no (${shortfall(t)})`;
  return `trains: yes (${t.backend}, ${t.weights ?? "streamed"}, ctx ${t.maxContext})`;
}
