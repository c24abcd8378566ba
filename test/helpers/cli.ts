import { spawnSync } from "node:child_process";
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

/** A fresh temp dir, removed when the process exits. */
export function tempDir(prefix = "clawrl-test-"): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Git-ignored cache for generated test models (shared between test files and runs). */
export const testCacheDir = path.join(repoRoot, ".cache", "test");

/** The real trained model from shared/, or null (tests skip with a message) when absent. */
export function storiesModelPath(): string | null {
  const p = path.resolve(repoRoot, "..", "shared", "models", "stories260K.gguf");
  return fs.existsSync(p) ? p : null;
}
