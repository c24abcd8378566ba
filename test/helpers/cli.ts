import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export const repoRoot = path.resolve(import.meta.dirname, "..", "..");
export const clawrlBin = path.join(repoRoot, "bin", "clawrl");

/** Runs `bin/clawrl` as a user would, in a child process. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000) {
  const r = spawnSync(process.execPath, [clawrlBin, ...args], {
    cwd: repoRoot,
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: timeoutMs,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Like runCli, without blocking this process's event loop: needed when the command talks to a
 * server running inside the test process.
 */
export function runCliAsync(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 120_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [clawrlBin, ...args], { cwd: repoRoot, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A fresh temp dir, removed when the process exits. */
export function tempDir(prefix = "clawrl-test-"): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Git-ignored cache for generated test models (shared between test files and runs). */
export const testCacheDir = path.join(repoRoot, ".cache", "test");

/** The real trained model the repository ships for tests (models/test/README.md). */
export function storiesModelPath(): string {
  const p = path.join(repoRoot, "models", "test", "stories260K.gguf");
  if (!fs.existsSync(p)) throw new Error(`${p} is missing: it is part of the repository (git checkout -- models/test)`);
  return p;
}
