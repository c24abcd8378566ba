/**
 * A GPU backend is proven before it is trusted. llama.cpp's prebuilt GPU binaries can load,
 * report a device, load a model with every layer offloaded, and then abort the whole process at
 * the first evaluation (node-llama-cpp 3.22.1's CUDA binary on an H100 with driver 580: "the
 * provided PTX was compiled with an unsupported toolchain"; its PTX needs CUDA 13.1), hang, or
 * compute NaN. So before the core loads a model on a GPU backend, a child process
 * (probeChild.ts) loads it there and evaluates a prompt and one token; a crash, a hang (no answer
 * in time) or non-finite logits mark the backend broken on this machine, remembered with the
 * reason (backendProbe.json in the data dir) until the app, llama.cpp binaries or the GPU driver
 * change, and the next backend is tried: CUDA → Vulkan → CPU (Metal → CPU on a Mac). The core
 * never dies because a GPU kernel cannot run.
 *
 * The probe runs at each engine load (start, or a model change), once per GPU backend until one
 * passes; a backend remembered broken is skipped without a probe. The CPU backend is not probed:
 * it is the last resort, and a failure there has nothing to fall back to.
 */
import { fork } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { getLlama, getLlamaGpuTypes, LlamaLogLevel, type Llama } from "node-llama-cpp";
import { vulkanDriverFiles } from "../../../common/vulkanDrivers.js";
import { appRoot } from "../config/paths.js";
import type { BackendName, BackendPreference } from "./backend.js";
import type { ProbeMessage, ProbeRequest } from "./probeChild.js";
import { capCpuThreads } from "./threads.js";

export type GpuBackend = Exclude<ProbeRequest["backend"], "cpu">;

/** Why a backend was not used. */
export interface BackendSkip {
  backend: BackendName;
  reason: string;
  /** "unavailable": this machine has no working binary or device for it; "broken": it ran and failed (crash, hang, NaN). */
  kind: "unavailable" | "broken";
  /** Known from an earlier start (the probe did not run now), since this ISO time. */
  rememberedSince?: string;
}

export interface ProbeOptions {
  /** Where backends found broken or unavailable are remembered; none: nothing is remembered. */
  cacheFile?: string;
  /** Longest wait for the child to load the model on the device (default 5 min: big models, cold disks). */
  loadTimeoutMs?: number;
  /** Longest wait for the evaluation once the model is loaded (default 60 s). */
  evalTimeoutMs?: number;
  /** Module the probe child runs instead of probeChild (tests: one that aborts, hangs or returns NaN). */
  script?: string;
  /** Extra environment for the child. */
  env?: NodeJS.ProcessEnv;
  /** Machine fingerprint override (tests: an app or driver update). */
  fingerprint?: Record<string, string>;
  /**
   * Why a GPU backend cannot exist here, so that no child is needed (null: probe it). Default:
   * node-llama-cpp's check on "auto" (CUDA libraries, a Vulkan loader, Apple silicon) and, on
   * Linux, whether any Vulkan driver is installed. Tests replace it to probe fake backends.
   */
  precheck?: (backend: GpuBackend, pref: BackendPreference) => Promise<string | null>;
}

export type ProbeOutcome =
  { kind: "ok"; backend: ProbeRequest["backend"]; gpuLayers: number; devices: string[]; ms: number } | { kind: "unavailable" | "broken"; reason: string };

/** Backends tried, in order, for a preference: a named GPU falls back to the CPU. */
export function backendOrder(pref: BackendPreference, platform: NodeJS.Platform = process.platform): Array<GpuBackend | "cpu"> {
  if (pref === "cpu") return ["cpu"];
  if (pref === "cuda" || pref === "vulkan" || pref === "metal") return [pref, "cpu"];
  return platform === "darwin" ? ["metal", "cpu"] : ["cuda", "vulkan", "cpu"];
}

function fileHash(files: string[]): string {
  const h = createHash("sha256");
  for (const f of files.sort()) {
    try {
      h.update(f).update(fs.readFileSync(f));
    } catch {
      // unreadable: its name still counts
    }
  }
  return h.digest("hex").slice(0, 16);
}

function packageVersion(file: string): string {
  try {
    return String((JSON.parse(fs.readFileSync(file, "utf8")) as { version?: string }).version ?? "?");
  } catch {
    return "?";
  }
}

let fingerprintCache: Record<string, string> | null = null;
/**
 * What a remembered verdict depends on: the app and llama.cpp binaries, the NVIDIA driver
 * (/proc/driver/nvidia/version), the installed Vulkan drivers (their ICD manifests), the OS.
 */
export function machineFingerprint(): Record<string, string> {
  if (fingerprintCache) return fingerprintCache;
  let nvidia = "";
  try {
    nvidia = fs.readFileSync("/proc/driver/nvidia/version", "utf8").split("\n")[0].trim();
  } catch {
    // no NVIDIA kernel driver (or not Linux)
  }
  const icds = process.platform === "linux" ? vulkanDriverFiles() : [];
  fingerprintCache = {
    app: packageVersion(path.join(appRoot, "package.json")),
    nodeLlamaCpp: packageVersion(path.join(appRoot, "node_modules", "node-llama-cpp", "package.json")),
    platform: `${process.platform}-${process.arch} ${os.release()}`,
    nvidiaDriver: nvidia,
    vulkanDrivers: icds.length > 0 ? fileHash(icds) : "",
  };
  return fingerprintCache;
}

interface Remembered {
  backend: BackendName;
  kind: "unavailable" | "broken";
  reason: string;
  at: string;
  fingerprint: Record<string, string>;
}

const sameFingerprint = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
};

/** The verdicts remembered in `file` (missing or unreadable: none). */
export function readRemembered(file: string): Remembered[] {
  try {
    const data = JSON.parse(fs.readFileSync(file, "utf8")) as { entries?: Remembered[] };
    return Array.isArray(data.entries) ? data.entries.filter((e) => e && typeof e.backend === "string" && typeof e.reason === "string" && e.fingerprint) : [];
  } catch {
    return [];
  }
}

function remember(file: string, entry: Remembered): void {
  const entries = readRemembered(file).filter((e) => e.backend !== entry.backend);
  entries.push(entry);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ version: 1, entries }, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

/** How to run the probe child: a bundled JS next to the core, or the TypeScript source through tsx. */
function probeEntry(script?: string): { entry: string; execArgv: string[] } {
  if (script) return { entry: script, execArgv: script.endsWith(".ts") ? ["--import", "tsx"] : [] };
  for (const bundled of [path.join(import.meta.dirname, "backend-probe.js"), path.join(import.meta.dirname, "..", "backend-probe.js")]) {
    if (fs.existsSync(bundled)) return { entry: bundled, execArgv: [] };
  }
  return { entry: path.join(appRoot, "electron", "core", "inference", "probeChild.ts"), execArgv: ["--import", "tsx"] };
}

/** The lines of a crashed child's output that say why (llama.cpp's error lines), shortened. */
function lastWords(output: string): string {
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const errors = lines.filter((l) => /error|abort|fail|assert|exception|fault/i.test(l));
  const pick = (errors.length > 0 ? errors : lines).slice(-2).join(" | ");
  return pick.length > 400 ? `${pick.slice(0, 400)}…` : pick;
}

/** Loads the model on `backend` in a child process and evaluates; never throws. */
export function runProbe(
  backend: ProbeRequest["backend"],
  model: { modelPath: string; gpuLayers: ProbeRequest["gpuLayers"] },
  opts: ProbeOptions = {},
): Promise<ProbeOutcome> {
  const loadMs = opts.loadTimeoutMs ?? 300_000;
  const evalMs = opts.evalTimeoutMs ?? 60_000;
  const { entry, execArgv } = probeEntry(opts.script);
  return new Promise((resolve) => {
    let output = "";
    let phase: "loading" | "evaluating" = "loading";
    let loaded: Extract<ProbeMessage, { type: "loaded" }> | null = null;
    let settled = false;
    const child = fork(entry, [], {
      execArgv,
      env: { ...process.env, ...opts.env },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-8192);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    let timer: NodeJS.Timeout;
    const arm = (ms: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        finish({
          kind: "broken",
          reason: `hung: no answer within ${Math.round(ms / 1000)} s while ${phase === "loading" ? "loading the model" : "evaluating"}`,
        });
        child.kill("SIGKILL");
      }, ms);
    };
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    const finish = (o: ProbeOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (exited() || o.kind === "broken") {
        if (!exited()) child.kill("SIGKILL");
        resolve(o);
        return;
      }
      // An answer came: the child frees the device and exits by itself. The core loads the model
      // on the device next, so its memory must be back first (a grace period, then SIGKILL).
      const grace = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.once("exit", () => {
        clearTimeout(grace);
        resolve(o);
      });
    };
    arm(loadMs);
    child.on("message", (raw) => {
      const m = raw as ProbeMessage;
      if (m.type === "unavailable") finish({ kind: "unavailable", reason: m.reason });
      else if (m.type === "loaded") {
        loaded = m;
        phase = "evaluating";
        arm(evalMs);
      } else if (m.type === "result") {
        const bad = m.evaluations.find((e) => e.logits === 0 || e.nonFinite > 0);
        if (bad) {
          const what = bad.logits === 0 ? "no logits" : `${bad.nonFinite} of ${bad.logits} logits not finite`;
          finish({ kind: "broken", reason: `wrong results: ${what} after evaluating ${bad.tokens} token${bad.tokens === 1 ? "" : "s"}` });
        } else finish({ kind: "ok", backend, gpuLayers: loaded?.gpuLayers ?? 0, devices: loaded?.devices ?? [], ms: m.ms });
      }
    });
    child.on("error", (err) => finish({ kind: "broken", reason: `the probe could not run: ${err.message}` }));
    child.on("exit", (code, signal) => {
      // Let the output that came with the exit arrive first.
      setImmediate(() => {
        const how = signal ? `crashed (${signal})` : `exited with code ${code}`;
        const words = lastWords(output);
        finish({ kind: "broken", reason: `${how} while ${phase === "loading" ? "loading the model" : "evaluating"}${words ? `: ${words}` : ""}` });
      });
    });
    child.send({ backend, modelPath: model.modelPath, gpuLayers: model.gpuLayers } satisfies ProbeRequest);
  });
}

let gpuTypes: Promise<Set<string | false>> | null = null;
/** Cheap reasons a backend cannot exist here (milliseconds, no child process). */
async function defaultPrecheck(b: GpuBackend, pref: BackendPreference): Promise<string | null> {
  if (b === "metal" && process.platform !== "darwin") return "Metal runs only on a Mac";
  if (b === "vulkan" && process.platform === "linux" && vulkanDriverFiles().length === 0)
    return "no Vulkan driver installed (no ICD manifest where the Vulkan loader looks)";
  // node-llama-cpp's own detection, ~20 ms; only on "auto": a named backend is tried regardless.
  if (pref === "auto") {
    gpuTypes ??= getLlamaGpuTypes("supported").then(
      (t) => new Set(t),
      () => new Set<string | false>(),
    );
    if (!(await gpuTypes).has(b)) return `node-llama-cpp finds no ${b} support on this machine`;
  }
  return null;
}

export interface ChosenBackend {
  llama: Llama;
  backend: BackendName;
  /** Backends tried before this one and why they were not used, in order. */
  skipped: BackendSkip[];
  /** The probe that passed (GPU backends), with the devices it ran on. */
  probe: Extract<ProbeOutcome, { kind: "ok" }> | null;
}

/**
 * Picks the first backend in `pref`'s order that is available and proven, and hands its
 * llama.cpp bindings to `load` (the model and context go there). A GPU backend is probed first
 * (or skipped when remembered broken); a failure of `load` on a GPU backend moves on too.
 */
export async function chooseBackend<T>(
  pref: BackendPreference,
  model: { modelPath: string; gpuLayers: ProbeRequest["gpuLayers"] },
  load: (llama: Llama, backend: BackendName) => Promise<T>,
  opts: ProbeOptions = {},
): Promise<ChosenBackend & { loaded: T }> {
  const skipped: BackendSkip[] = [];
  const fingerprint = opts.fingerprint ?? machineFingerprint();
  const precheck = opts.precheck ?? defaultPrecheck;
  for (const b of backendOrder(pref)) {
    if (b === "cpu") {
      const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.error });
      capCpuThreads(llama);
      try {
        return { llama, backend: "cpu", skipped, probe: null, loaded: await load(llama, "cpu") };
      } catch (err) {
        await llama.dispose();
        if (skipped.length === 0) throw err;
        throw new Error(`${(err as Error).message} (GPU backends skipped: ${describeSkips(skipped)})`, { cause: err });
      }
    }
    const absent = await precheck(b, pref);
    if (absent) {
      skipped.push({ backend: b, kind: "unavailable", reason: absent });
      continue;
    }
    const known = opts.cacheFile ? readRemembered(opts.cacheFile).find((e) => e.backend === b && sameFingerprint(e.fingerprint, fingerprint)) : undefined;
    if (known) {
      skipped.push({ backend: b, kind: known.kind, reason: known.reason, rememberedSince: known.at });
      continue;
    }
    const outcome = await runProbe(b, model, opts);
    if (outcome.kind !== "ok") {
      skipped.push({ backend: b, kind: outcome.kind, reason: outcome.reason });
      if (opts.cacheFile) remember(opts.cacheFile, { backend: b, kind: outcome.kind, reason: outcome.reason, at: new Date().toISOString(), fingerprint });
      continue;
    }
    let llama: Llama;
    try {
      llama = await getLlama({ gpu: b, build: "never", skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.error });
    } catch (err) {
      skipped.push({
        backend: b,
        kind: "unavailable",
        reason: `the probe passed, but the core could not load it: ${(err as Error).message.split("\n")[0]}`,
      });
      continue;
    }
    try {
      return { llama, backend: b, skipped, probe: outcome, loaded: await load(llama, b) };
    } catch (err) {
      await llama.dispose();
      skipped.push({ backend: b, kind: "unavailable", reason: `loading the model failed: ${(err as Error).message.split("\n")[0]}` });
    }
  }
  throw new Error(`no usable llama.cpp backend (${describeSkips(skipped)})`);
}

/** "cuda: reason; vulkan: reason" */
export function describeSkips(skipped: readonly BackendSkip[]): string {
  return skipped.map((s) => `${s.backend}: ${s.reason}${s.rememberedSince ? ` (remembered since ${s.rememberedSince})` : ""}`).join("; ");
}
