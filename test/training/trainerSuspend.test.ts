/**
 * While chat waits for a first token the trainer process stands aside (inference/foreground.ts,
 * training/trainerProcess.ts): a real trainer worker is suspended (SIGSTOP: its state in
 * /proc is "T"), resumed when the wait ends, resumed anyway after FOREGROUND_MAX_SUSPEND_MS, and
 * a suspended worker still answers, and stops, once resumed; a core that exits while its trainer
 * is suspended resumes it, so it sees its parent go and exits too. Linux only (/proc; SIGSTOP is
 * POSIX, and Windows never suspends).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { Foreground } from "../../electron/core/inference/foreground.js";
import { FOREGROUND_MAX_SUSPEND_MS, TrainerProcess } from "../../electron/core/training/trainerProcess.js";
import type { SupervisorContext } from "../../electron/core/training/supervisorTypes.js";
import { WorkerClient } from "../../electron/core/training/workerClient.js";
import { tinyModel } from "../helpers/models.js";

const skip = process.platform !== "linux" && "needs /proc";

/** The process's scheduler state letter from /proc (R, S, T, ...). */
function state(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
}

async function until(f: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}

let worker: WorkerClient;
before(async () => {
  if (skip) return;
  worker = new WorkerClient({ niceness: 0, onLog: () => undefined });
  await worker.request({
    type: "init",
    modelPath: await tinyModel({ arch: "qwen2" }),
    settings: { method: "combined", rank: 4, alpha: 8, lr: 1e-3, maxContext: 128, teacher: "current", seed: 1, backend: "wasm", klBeta: 0.1 },
    resumeDir: null,
  });
});
after(async () => {
  await worker?.stop();
});

test("a first-token wait suspends the trainer until it ends; a long one at most FOREGROUND_MAX_SUSPEND_MS", { skip }, async () => {
  const foreground = new Foreground();
  const ctx = { o: { foreground }, stopping: false } as unknown as SupervisorContext;
  const trainer = new TrainerProcess(ctx);
  trainer.worker = worker;
  const pid = worker.pid!;
  assert.notEqual(state(pid), "T");

  const end = foreground.begin();
  await until(() => state(pid) === "T");
  assert.equal(worker.isSuspended, true);
  // A second request waiting meanwhile changes nothing; the trainer runs again when the last wait ends.
  const end2 = foreground.begin();
  end();
  assert.equal(state(pid), "T");
  end2();
  await until(() => state(pid) !== "T");
  assert.equal(worker.isSuspended, false);
  // It answers after a suspension.
  assert.ok((await worker.request({ type: "memory" })).rssBytes > 0);

  // A wait that never ends lets the trainer go after the bound.
  const t0 = Date.now();
  const endLong = foreground.begin();
  await until(() => state(pid) === "T");
  await until(() => state(pid) !== "T", FOREGROUND_MAX_SUSPEND_MS + 2000);
  const held = Date.now() - t0;
  assert.ok(held >= FOREGROUND_MAX_SUSPEND_MS - 50, `resumed after ${held} ms`);
  endLong();

  // Suspended when asked to stop: the trainer resumes, reads its shutdown and exits on its own.
  const end3 = foreground.begin();
  await until(() => state(pid) === "T");
  await trainer.stop();
  const exit = await worker.exit;
  assert.equal(exit.signal, null, `exited by ${exit.signal}`);
  end3();
});

test("a core that exits while its trainer is suspended resumes it, and the trainer exits on its own", { skip }, async () => {
  const child = path.join(import.meta.dirname, "suspendExit-child.ts");
  const r = spawnSync(process.execPath, ["--import", "tsx", child], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, r.stdout);
  const gone = () => !fs.existsSync(`/proc/${pid}`) || state(pid) === "Z";
  try {
    await until(gone, 10_000);
  } finally {
    // Never leave a stopped trainer behind when the check fails.
    if (!gone()) process.kill(pid, "SIGKILL");
  }
});
