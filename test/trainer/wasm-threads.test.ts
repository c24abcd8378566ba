/**
 * The wasm backend's threaded-SIMD build (trainer/wasm/threads.ts): with 2 threads it runs 2
 * XNNPACK threads and gives products and gradients bitwise equal to the single-threaded build;
 * every injected failure of the threaded start (a worker that throws, never answers, exits; a
 * failure after the backend is up; tfjs internals that differ) falls back to 1 thread with the
 * reason, computes the same bits, and the process exits on its own at once. CLAWRL_WASM_THREADS
 * picks the count (1: the single-threaded build). An XNNPACK worker that dies after the start
 * ends the process with the reason (the app restarts the trainer) instead of a hang. Each case is a child process (one tfjs engine
 * per process) with a time limit, so a hang fails the test instead of stalling it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fork, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { repoRoot } from "../helpers/cli.js";

const CHILD = path.join("test", "trainer", "wasm-threads-child.ts");
/** A child that has not exited by then is killed and the case fails. */
const CHILD_LIMIT_MS = 90_000;
/**
 * From its last result to its exit: lingering workers or handles would hold it longer. "At once"
 * on an idle machine; loose for a busy shared one, where the niced child waits for a core.
 */
const EXIT_AFTER_RESULT_MS = 15_000;

interface ChildOut {
  choice?: { name: string; device: string; wasmThreads?: { wanted: number; threads: number; why?: string } };
  lines?: string[];
  active?: string;
  threads?: number;
  results?: Record<string, string>;
  numTensors?: number;
  error?: string;
  doneAt: number;
}
interface Run {
  out: ChildOut;
  code: number | null;
  signal: NodeJS.Signals | null;
  exitedAt: number;
  stderr: string;
}

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const k of ["CLAWRL_TF_BACKEND", "CLAWRL_WASM_THREADS", "CLAWRL_WASM_THREADS_TEST_FAULT", "CLAWRL_WASM_THREADS_TEST_TIMEOUT_MS"]) {
    if (!(k in env)) delete e[k];
  }
  return e;
}

/** Runs the child script to its natural end; its one stdout line is the result. */
function run(env: Record<string, string>, arg?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", CHILD, ...(arg ? [arg] : [])], {
      cwd: repoRoot,
      env: childEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const limit = setTimeout(() => p.kill("SIGKILL"), CHILD_LIMIT_MS);
    p.on("error", reject);
    p.on("exit", (code, signal) => {
      clearTimeout(limit);
      const exitedAt = Date.now();
      try {
        const out = JSON.parse(stdout.trim().split("\n").pop() ?? "") as ChildOut;
        resolve({ out, code, signal, exitedAt, stderr });
      } catch {
        reject(new Error(`child ${JSON.stringify(env)} exited ${code ?? signal} without a result:\n${stderr.slice(-3000)}`));
      }
    });
  });
}

function assertExitedCleanly(r: Run): void {
  assert.equal(r.out.error, undefined, r.out.error);
  assert.equal(r.signal, null, `the child was killed (${r.signal}): it did not exit within ${CHILD_LIMIT_MS} ms\n${r.stderr.slice(-2000)}`);
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  const lag = r.exitedAt - r.out.doneAt;
  assert.ok(lag < EXIT_AFTER_RESULT_MS, `the child took ${lag} ms to exit after its result`);
  assert.equal(r.out.numTensors, 0);
}

let single: Promise<Run> | null = null;
/** The single-threaded build's run, the reference for every other case. */
function singleRun(): Promise<Run> {
  single ??= run({ CLAWRL_WASM_THREADS: "1" });
  return single;
}

function assertSameBits(got: Run, want: Run): void {
  assert.ok(want.out.results && got.out.results);
  assert.deepEqual(Object.keys(got.out.results), Object.keys(want.out.results));
  for (const [name, b] of Object.entries(want.out.results)) {
    assert.ok(got.out.results[name] === b, `${name}: bits differ from the single-threaded build`);
  }
}

test("CLAWRL_WASM_THREADS=1: the single-threaded build, 1 thread, no reason given", async () => {
  const r = await singleRun();
  assertExitedCleanly(r);
  assert.equal(r.out.active, "wasm");
  assert.equal(r.out.threads, 1);
  assert.equal(r.out.choice?.device, "wasm (simd, 1 thread)");
  assert.deepEqual(r.out.choice?.wasmThreads, { wanted: 1, threads: 1 });
});

test("2 threads: XNNPACK runs 2, matMul and tf.grads bitwise equal to the single-threaded build", async () => {
  const [r, s] = await Promise.all([run({ CLAWRL_WASM_THREADS: "2" }), singleRun()]);
  assertExitedCleanly(r);
  assert.equal(r.out.threads, 2);
  assert.equal(r.out.choice?.device, "wasm (simd, 2 threads)");
  assert.deepEqual(r.out.choice?.wasmThreads, { wanted: 2, threads: 2 });
  assert.ok(r.out.lines?.includes("trainer backend: wasm on wasm (simd, 2 threads)"), r.out.lines?.join("\n"));
  assertSameBits(r, s);
});

test("default thread count: min(8, available cores)", async () => {
  const r = await run({});
  assertExitedCleanly(r);
  const want = Math.min(8, os.availableParallelism());
  assert.equal(r.out.choice?.wasmThreads?.wanted, want);
  assert.equal(r.out.threads, want);
});

test("CLAWRL_WASM_THREADS that is not a whole number: the default, with a log line", async () => {
  const r = await run({ CLAWRL_WASM_THREADS: "two" });
  assertExitedCleanly(r);
  assert.equal(r.out.choice?.wasmThreads?.wanted, Math.min(8, os.availableParallelism()));
  assert.ok(
    r.out.lines?.some((l) => /CLAWRL_WASM_THREADS=two is not a whole number/.test(l)),
    r.out.lines?.join("\n"),
  );
});

const FAULTS: Array<[fault: string, why: RegExp]> = [
  ["worker-throw", /^a pthread worker failed: injected test fault$/],
  ["worker-silent", /^the threaded module did not start within 1500 ms$/],
  ["worker-exit", /^a pthread worker exited \(code 3\)$/],
  ["after-ready", /^injected test fault after the threaded backend was up$/],
  ["internals", /^tfjs-backend-wasm internals differ from 4\.22\.0: no main-script Blob/],
];

for (const [fault, why] of FAULTS) {
  test(`fault ${fault}: falls back to 1 thread with the reason, computes the same bits, exits at once`, async () => {
    const [r, s] = await Promise.all([
      // The short start limit only for the fault that needs it: a loaded machine can take longer
      // than 1.5 s to start the threads, and the other faults must be reported as themselves.
      run({
        CLAWRL_WASM_THREADS: "2",
        CLAWRL_WASM_THREADS_TEST_FAULT: fault,
        ...(fault === "worker-silent" ? { CLAWRL_WASM_THREADS_TEST_TIMEOUT_MS: "1500" } : {}),
      }),
      singleRun(),
    ]);
    assertExitedCleanly(r);
    assert.equal(r.out.active, "wasm");
    assert.equal(r.out.threads, 1);
    const wt = r.out.choice?.wasmThreads;
    assert.equal(wt?.wanted, 2);
    assert.equal(wt?.threads, 1);
    assert.match(wt?.why ?? "", why);
    assert.equal(r.out.choice?.device, `wasm (simd, 1 thread; threads unavailable: ${wt?.why})`);
    assert.ok(r.out.lines?.includes(`trainer backend: wasm on ${r.out.choice?.device}`), r.out.lines?.join("\n"));
    assertSameBits(r, s);
  });
}

test("forked as the app runs the trainer (niceness 19, advanced serialization): 2 threads, exits when the parent disconnects", async () => {
  const got = await new Promise<{ out: ChildOut; code: number | null; signal: NodeJS.Signals | null; lag: number }>((resolve, reject) => {
    const p = fork(CHILD, [], {
      cwd: repoRoot,
      env: childEnv({ CLAWRL_WASM_THREADS: "2" }),
      execArgv: ["--import", "tsx"],
      serialization: "advanced",
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    let stderr = "";
    p.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    if (p.pid !== undefined) os.setPriority(p.pid, 19);
    const limit = setTimeout(() => p.kill("SIGKILL"), CHILD_LIMIT_MS);
    let out: ChildOut | null = null;
    let sentAt = 0;
    p.on("message", (m) => {
      out = m as ChildOut;
      sentAt = Date.now();
      p.disconnect();
    });
    p.on("error", reject);
    p.on("exit", (code, signal) => {
      clearTimeout(limit);
      if (!out) reject(new Error(`forked child exited ${code ?? signal} without a result:\n${stderr.slice(-3000)}`));
      else resolve({ out, code, signal, lag: Date.now() - sentAt });
    });
  });
  assert.equal(got.out.error, undefined, got.out.error);
  assert.equal(got.signal, null, "the forked child had to be killed");
  assert.equal(got.code, 0);
  assert.ok(got.lag < EXIT_AFTER_RESULT_MS, `the forked child took ${got.lag} ms to exit after the disconnect`);
  assert.equal(got.out.threads, 2);
  assertSameBits({ out: got.out } as Run, await singleRun());
});

test("an XNNPACK worker that dies after the start ends the process with the reason, not a hang", async () => {
  const r = await run({ CLAWRL_WASM_THREADS: "2" }, "kill-worker");
  assert.equal(r.out.error, undefined, r.out.error);
  assert.equal(r.out.threads, 2);
  assert.equal(r.signal, null, `the child hung and was killed\n${r.stderr.slice(-2000)}`);
  assert.equal(r.code, 1, r.stderr.slice(-2000));
  assert.match(r.stderr, /trainer backend: wasm: a pthread worker exited \(code 1\); the XNNPACK thread it ran is gone/);
  const lag = r.exitedAt - r.out.doneAt;
  assert.ok(lag < EXIT_AFTER_RESULT_MS, `the child took ${lag} ms to end after the worker was terminated`);
});
