/**
 * "Check this machine" (Settings): POST /api/doctor/run starts a `clawrl doctor --quick` run,
 * GET /api/doctor tells how it goes and gives the last report; the `doctor` SSE event carries
 * one line per probe, as the CLI prints them. One run at a time (a second POST is a 409 with the
 * running one's status). runDoctor does in-process work too (generating a shape model takes a
 * minute of CPU), so the whole run is a child process of the core (doctor/child.ts, through tsx
 * as doctor's probes are), and the core's event loop stays free.
 */
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { DoctorBusyReply, DoctorEvent, DoctorRunRequest, DoctorStatus } from "../../api/doctor.js";
import { appRoot } from "../../config/paths.js";
import type { DoctorChildMessage, DoctorChildRequest } from "../../doctor/child.js";
import { tailOf } from "../../doctor/probeRunner.js";
import type { DoctorSection } from "../../doctor/run.js";
import { ApiError, parseBody } from "../errors.js";

const RunBody = z.strictObject({
  only: z
    .array(z.enum(["machine", "inference", "training"]))
    .min(1)
    .max(3)
    .optional(),
}) satisfies z.ZodType<DoctorRunRequest>;

/** Lines kept of a run's progress (a --quick run prints a few dozen). */
const MAX_LINES = 500;
/** A --quick run ends in ~3 minutes on a busy 2-core machine; past this the run is stopped. */
const RUN_TIMEOUT_MS = 15 * 60_000;

export interface DoctorRouteOptions {
  /** The data dir's models folder: the active model is the served one the report plans for. */
  modelsDir: string;
  emit: (e: DoctorEvent) => void;
  /** Test hook: the child module (default doctor/child.ts). */
  childScript?: string;
}

export function registerDoctorRoutes(app: FastifyInstance, opts: DoctorRouteOptions): void {
  const script = opts.childScript ?? path.join(appRoot, "electron", "core", "doctor", "child.ts");
  let state: DoctorStatus = { running: false, startedAt: null, progress: [], report: null, markdown: null, error: null, finishedAt: null };
  let child: ChildProcess | null = null;

  /** The child and its probes (same process group on POSIX: they are grandchildren). */
  const killRun = () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    try {
      if (process.platform !== "win32" && child.pid) process.kill(-child.pid, "SIGKILL");
      else child.kill("SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  };

  function start(only: DoctorSection[] | undefined): void {
    const startedAt = new Date().toISOString();
    // The last report stays readable while the next run goes on.
    state = { ...state, running: true, startedAt, progress: [], error: null };
    opts.emit({ type: "started", startedAt });
    let output = "";
    let ended = false;
    const line = (l: string) => {
      state.progress.push(l);
      if (state.progress.length > MAX_LINES) state.progress.splice(0, state.progress.length - MAX_LINES);
      opts.emit({ type: "progress", line: l });
    };
    const end = (r: { report: DoctorStatus["report"]; markdown: string | null } | { error: string }) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      const finishedAt = new Date().toISOString();
      state =
        "error" in r
          ? { ...state, running: false, error: r.error, finishedAt }
          : { ...state, running: false, report: r.report, markdown: r.markdown, error: null, finishedAt };
      killRun();
      child = null;
      opts.emit({ type: "done", ok: !("error" in r), finishedAt });
    };
    const env = process.env;
    const request: DoctorChildRequest = {
      modelsDir: opts.modelsDir,
      only,
      // As the CLI: the trainer's variables that ask for WebGPU by name.
      webgpu: env.CLAWRL_TF_BACKEND === "webgpu" || Boolean(env.CLAWRL_WEBGPU_ROUTE),
    };
    const c = fork(script, [], {
      execArgv: script.endsWith(".ts") ? ["--import", "tsx"] : [],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      // Its own process group, so that stopping it stops its probes too.
      detached: process.platform !== "win32",
    });
    child = c;
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-16_384);
    };
    c.stdout?.on("data", keep);
    c.stderr?.on("data", keep);
    const timer = setTimeout(() => end({ error: `doctor did not finish within ${RUN_TIMEOUT_MS / 60_000} minutes (stopped)` }), RUN_TIMEOUT_MS);
    c.on("message", (raw) => {
      const m = raw as DoctorChildMessage;
      if (m.type === "progress") line(m.line);
      else if (m.type === "report") end({ report: m.report, markdown: m.markdown });
      else if (m.type === "error") end({ error: m.message });
    });
    c.on("error", (err) => end({ error: `doctor could not run: ${err.message}` }));
    c.on("exit", (code, signal) => {
      // The result message may still be on its way: let it land first.
      setTimeout(() => {
        const words = tailOf(output);
        end({ error: `doctor ${signal ? `crashed (${signal})` : `exited with code ${code}`} before its report${words ? `: ${words}` : ""}` });
      }, 100);
    });
    c.send(request);
  }

  app.addHook("onClose", async () => killRun());

  app.get("/api/doctor", async (): Promise<DoctorStatus> => state);

  app.post("/api/doctor/run", async (req, reply) => {
    const body = parseBody(RunBody, req.body, { optional: true });
    if (state.running) {
      const busy = new ApiError(409, "A machine check is already running; GET /api/doctor tells how it goes.", "invalid_request_error", null, "doctor_running");
      return reply.status(409).send({ ...busy.toJSON(), doctor: state } satisfies DoctorBusyReply);
    }
    // "machine" alone: the machine is always described, so it narrows to no section.
    const only = body.only ? (["inference", "training"] as const).filter((s) => body.only!.includes(s)) : undefined;
    start(only);
    return reply.status(202).send(state satisfies DoctorStatus);
  });
}
