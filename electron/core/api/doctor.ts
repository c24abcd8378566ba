/**
 * GET /api/doctor, POST /api/doctor/run and the `doctor` SSE event: the Settings page's
 * "Check this machine" (a `clawrl doctor --quick` run in a child of the core; docs/doctor.md).
 */
import type { DoctorReport } from "./doctorReport.js";

export type { DoctorReport };

/** What a run measures besides the machine (always described); the app's button asks for all (the default). */
export type DoctorRunSection = "machine" | "inference" | "training";

/** POST /api/doctor/run's body (optional): `only` narrows the run (tests); omitted = the --quick full run. */
export interface DoctorRunRequest {
  only?: DoctorRunSection[];
}

/** GET /api/doctor, and the 202 of POST /api/doctor/run: the running or the last run. */
export interface DoctorStatus {
  running: boolean;
  /** When the current or last run started (ISO); null: never run since the core started. */
  startedAt: string | null;
  /** One line per probe as it starts and ends (as the CLI prints them), of the current or last run. */
  progress: string[];
  /** The last finished run's report (null while the first run goes on, or when it failed). */
  report: DoctorReport | null;
  /** The report as Markdown (what `clawrl doctor` prints, for bug reports). */
  markdown: string | null;
  /** Why the last run gave no report. */
  error: string | null;
  /** When the last run ended (ISO); null: none has. */
  finishedAt: string | null;
}

/** POST /api/doctor/run while a run goes on: a 409 error body with the running one's status. */
export interface DoctorBusyReply {
  error: { message: string; type: string; param: string | null; code: string | null };
  doctor: DoctorStatus;
}

/** `doctor` event: a progress line of the running check, or its end (`done`: read GET /api/doctor). */
export type DoctorEvent = { type: "progress"; line: string } | { type: "started"; startedAt: string } | { type: "done"; ok: boolean; finishedAt: string };
