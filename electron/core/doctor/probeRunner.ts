/**
 * Runs one doctor probe in a child process, so that whatever a native backend does (abort on a
 * GPU kernel that cannot run, segfault in Dawn, hang in a driver) ends that child, never doctor.
 * A probe is a module (./probes/*.ts) that reads one request over IPC and answers with
 * ChildMessage lines (common/probeChild.ts); a crash, a hang past the timeout, a JS error or an
 * answer that does not parse is a "failed" outcome that says how it failed.
 */
import { fork } from "node:child_process";
import type { z } from "zod";
import { childMessageSchema } from "../../../common/probeChild.js";
import type { ProbeStatus } from "../api/doctorReport.js";

export interface ProbeSpec {
  /** Unique in a run: "inference.cpu", "training.wasm". */
  id: string;
  section: "machine" | "inference" | "training";
  /** Backend or route name: the row it fills. */
  name: string;
  /** Module the child runs (.ts through tsx). */
  script: string;
  request: unknown;
  timeoutMs: number;
}

export interface ProbeOutcome<T = unknown> {
  status: ProbeStatus;
  /** status "ok": the child's result, checked against the probe's schema. */
  data: T | null;
  reason: string | null;
  seconds: number;
  exit: { code: number | null; signal: string | null; outputTail: string } | null;
}

/** The lines of a dead child's output that say why (error lines first), shortened. */
export function tailOf(output: string, max = 600): string {
  // Node's own native stack after an abort ("----- Native stack trace -----", " 1: 0x… node::Abort()") says nothing about the backend.
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !/^-+ Native stack trace -+$/.test(l) && !/^\d+: /.test(l));
  const errors = lines.filter((l) => /error|abort|fail|assert|exception|fault|killed/i.test(l));
  const pick = (errors.length > 0 ? errors : lines).slice(-3).join(" | ");
  return pick.length > max ? `${pick.slice(0, max)}…` : pick;
}

/**
 * Forks `spec.script`, sends it `spec.request`, and resolves with its answer checked by
 * `schema`; never rejects. `onProgress` gets the child's progress lines.
 */
export function runProbeChild<S extends z.ZodType>(
  spec: ProbeSpec,
  schema: S,
  onProgress: (line: string) => void = () => undefined,
): Promise<ProbeOutcome<z.infer<S>>> {
  const t0 = performance.now();
  const seconds = () => (performance.now() - t0) / 1000;
  return new Promise((resolve) => {
    let output = "";
    let settled = false;
    const child = fork(spec.script, [], {
      execArgv: spec.script.endsWith(".ts") ? ["--import", "tsx"] : [],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-16_384);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    const finish = (o: Omit<ProbeOutcome<z.infer<S>>, "seconds">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const result = { ...o, seconds: seconds() };
      if (exited() || o.status === "failed") {
        if (!exited()) child.kill("SIGKILL");
        resolve(result);
        return;
      }
      // An answer came: the child frees its device and exits by itself; the next probe measures
      // that device, so its memory must be back first (a grace period, then SIGKILL).
      const grace = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.once("exit", () => {
        clearTimeout(grace);
        resolve(result);
      });
    };
    const failed = (reason: string, code: number | null = null, signal: string | null = null) =>
      finish({ status: "failed", data: null, reason, exit: { code, signal, outputTail: tailOf(output) } });
    const timer = setTimeout(() => failed(`hung or too slow here: no answer within ${Math.round(spec.timeoutMs / 1000)} s (killed)`), spec.timeoutMs);
    child.on("message", (raw) => {
      const m = childMessageSchema.safeParse(raw);
      if (!m.success) return failed(`the probe answered something else than its protocol: ${m.error.issues[0]?.message ?? "?"}`);
      const msg = m.data;
      if (msg.type === "progress") onProgress(msg.line);
      else if (msg.type === "unavailable" || msg.type === "skipped") finish({ status: msg.type, data: null, reason: msg.reason, exit: null });
      else if (msg.type === "failed") failed(msg.reason);
      else {
        const r = schema.safeParse(msg.data);
        if (r.success) finish({ status: "ok", data: r.data, reason: null, exit: null });
        else
          failed(
            `the probe's result does not match its schema: ${r.error.issues
              .map((i) => `${i.path.join(".")}: ${i.message}`)
              .join("; ")
              .slice(0, 300)}`,
          );
      }
    });
    child.on("error", (err) => failed(`the probe could not run: ${err.message}`));
    child.on("exit", (code, signal) => {
      // Let the output that came with the exit arrive first.
      setTimeout(() => {
        const how = signal ? `crashed (${signal})` : `exited with code ${code} before answering`;
        const words = tailOf(output);
        failed(`${how}${words ? `: ${words}` : ""}`, code, signal);
      }, 50);
    });
    child.send(spec.request as object);
  });
}
