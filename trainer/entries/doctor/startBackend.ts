/**
 * Starts one trainer backend by name in a doctor probe child, without the trainer's fall-through
 * to the next candidate (initBackend moves on when one cannot start: doctor wants that one's row).
 * WebGPU not asked for by name refuses a software adapter, as the trainer does.
 */
import { initBackend, type BackendChoice } from "../../backend.js";
import type { ChildMessage } from "../../../common/probeChild.js";
import type { TrainerBackend } from "./protocol.js";

export async function startTrainerBackend(
  name: TrainerBackend,
  explicit: boolean,
): Promise<BackendChoice | Extract<ChildMessage, { type: "unavailable" | "skipped" }>> {
  if (name === "webgpu" && !explicit) {
    // The trainer's own order (unnamed) would start webgpu only on a hardware adapter: try that.
    const { startWebGpu } = await import("../../webgpu/start.js");
    try {
      const { device, summary } = await startWebGpu({ allowSoftware: false, log: () => undefined });
      return { name: "webgpu", device, webgpu: summary, skipped: [] };
    } catch (err) {
      const why = (err instanceof Error ? err.message : String(err)).split("\n")[0];
      return /software/i.test(why) ? { type: "skipped", reason: `${why} (ask for it by name: --webgpu)` } : { type: "unavailable", reason: why };
    }
  }
  let choice: BackendChoice;
  try {
    choice = await initBackend(name, () => undefined);
  } catch (err) {
    return { type: "unavailable", reason: (err instanceof Error ? err.message : String(err)).split("\n")[0] };
  }
  const mine = choice.skipped.find((s) => s.name === name);
  if (mine) return { type: "unavailable", reason: mine.why };
  return choice;
}

export const isStarted = (x: Awaited<ReturnType<typeof startTrainerBackend>>): x is BackendChoice => !("type" in x);
