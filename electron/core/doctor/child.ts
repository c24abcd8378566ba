/**
 * `doctor` for the core (POST /api/doctor/run, server/routes/doctor.ts): runDoctor in a child
 * process of the core, so that its in-process work (generating a shape model: a minute of CPU)
 * never holds the core's event loop. Reads one DoctorChildRequest over IPC, sends a progress
 * message per line and then one result, and exits.
 */
import { renderMarkdown } from "./markdown.js";
import { runDoctor, type DoctorSection } from "./run.js";
import type { DoctorReport } from "../api/doctorReport.js";

export interface DoctorChildRequest {
  modelsDir: string;
  only?: DoctorSection[];
  webgpu: boolean;
}

export type DoctorChildMessage =
  { type: "progress"; line: string } | { type: "report"; report: DoctorReport; markdown: string } | { type: "error"; message: string };

const send = (m: DoctorChildMessage): Promise<void> => new Promise((resolve) => process.send!(m, () => resolve()));

process.once("message", (raw) => {
  const req = raw as DoctorChildRequest;
  void (async () => {
    try {
      const report = await runDoctor({
        mode: "quick",
        modelsDir: req.modelsDir,
        only: req.only,
        webgpu: req.webgpu,
        log: (line) => void send({ type: "progress", line }),
      });
      await send({ type: "report", report, markdown: renderMarkdown(report) });
    } catch (err) {
      await send({ type: "error", message: err instanceof Error ? err.message : String(err) });
    }
    process.disconnect();
  })();
});
