/**
 * Moves freshly made tensors onto the GPU now, on the WebGPU backend.
 *
 * tfjs-backend-webgpu 4.22.0 keeps a tensor made from values (`tf.tensor(f32)`) as that f32 array
 * on the host until an op first reads it, and frees the mapped staging buffer of an upload only
 * at the next queue submit. Loading a whole model's resident weights therefore held every layer's
 * f32 copy in RAM at once (an H100 run of bench/trainer-real-size.ts on the Qwen2.5-0.5B shape
 * peaked at 2.41 GiB of RSS against a plan of 595 MiB; docs/hardware/h100.md). Uploading each
 * layer as it is made, and submitting, bounds the host side to one layer, as the memory plan
 * (models/plan/memoryPlan.ts, "dequantize buffers") assumes.
 *
 * uploadToGPU, commandEncoder and submitQueue are that backend's internals, not public API: each
 * is feature-checked, and on any other backend (or another tfjs version without them) this does
 * nothing, which is only slower to free, never wrong.
 */
import * as tf from "@tensorflow/tfjs-core";

interface WebGpuInternals {
  uploadToGPU?: (dataId: object) => void;
  submitQueue?: () => void;
  commandEncoder?: unknown;
}

export function settleOnDevice(tensors: readonly tf.Tensor[]): void {
  if (tf.getBackend() !== "webgpu") return;
  const backend = tf.backend() as unknown as WebGpuInternals;
  if (typeof backend.uploadToGPU !== "function" || typeof backend.submitQueue !== "function") return;
  for (const t of tensors) backend.uploadToGPU(t.dataId);
  // An upload through a staging buffer records a copy in the open command encoder; submitting
  // runs it and releases the staging buffer. Uploads into buffers mapped at creation record nothing.
  if (backend.commandEncoder) backend.submitQueue();
}
