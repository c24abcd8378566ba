/**
 * Doctor's WebGPU probe, a child process: asks Dawn (the `webgpu` package, as the trainer does:
 * trainer/webgpu/dawn.ts) for an adapter, software routes included when allowed, and reports it
 * with the buffer limits the trainer plans with. Dawn is native code that can crash or hang in a
 * driver: it does so in here.
 */
import { openDawn } from "../../webgpu/dawn.js";
import { probeMain } from "../../../common/probeChild.js";
import { webgpuAdaptersRequestSchema } from "./protocol.js";

probeMain(webgpuAdaptersRequestSchema, async (req) => {
  let dawn;
  try {
    dawn = await openDawn({ allowSoftware: req.allowSoftware, log: () => undefined });
  } catch (err) {
    return { type: "unavailable", reason: (err instanceof Error ? err.message : String(err)).split("\n")[0] };
  }
  const s = dawn.summary;
  try {
    dawn.device.destroy();
  } catch {
    // already lost: the answer stands
  }
  return {
    type: "result",
    data: {
      name: s.name,
      description: s.description || s.device,
      vendor: s.vendor,
      backend: s.backend,
      software: s.software,
      maxBufferSize: s.maxBufferSize,
      maxStorageBufferBindingSize: s.maxStorageBufferBindingSize,
    },
  };
});
