import os from "node:os";
import path from "node:path";

/**
 * Where the app keeps its data. `CLAWRL_HOME` (or `--data-dir`) overrides; otherwise the
 * platform's usual place for per-user application data.
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string {
  if (env.CLAWRL_HOME) return path.resolve(env.CLAWRL_HOME);
  const home = os.homedir();
  if (platform === "win32") return path.join(env.APPDATA ?? path.join(home, "AppData", "Roaming"), "ClawRL");
  if (platform === "darwin") return path.join(home, "Library", "Application Support", "ClawRL");
  return path.join(env.XDG_DATA_HOME ?? path.join(home, ".local", "share"), "clawrl");
}

/** The fixed layout under the data dir, in one place so every module agrees. */
export function dataPaths(dataDir: string) {
  return {
    root: dataDir,
    token: path.join(dataDir, "token"),
    state: path.join(dataDir, "state.json"),
    logs: path.join(dataDir, "logs"),
    trajectories: path.join(dataDir, "logs", "trajectories.jsonl"),
    checkpoints: path.join(dataDir, "checkpoints"),
    models: path.join(dataDir, "models"),
  };
}
export type DataPaths = ReturnType<typeof dataPaths>;

/** The repository (or installed package) root: two levels above electron/core/config. */
export const appRoot = path.resolve(import.meta.dirname, "..", "..", "..");
