/**
 * Where the Vulkan loader finds drivers on Linux, read the way it reads them: its environment
 * overrides (VK_DRIVER_FILES, VK_ICD_FILENAMES, VK_ADD_DRIVER_FILES), else the ICD manifests
 * (vulkan/icd.d/*.json) in the XDG config and data directories and /etc, /usr/local/share,
 * /usr/share. Shared by the core's llama.cpp backend probe (no Vulkan driver: no probe) and the
 * trainer's Dawn start (no driver: Dawn's default path is skipped unloaded).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The directories the loader searches for `vulkan/icd.d`, in its order, each once. */
function icdSearchDirs(env: NodeJS.ProcessEnv, home: string): string[] {
  const split = (v: string | undefined, fallback: string) => (v || fallback).split(":").filter(Boolean);
  return [
    ...new Set([
      env.XDG_CONFIG_HOME || path.join(home, ".config"),
      ...split(env.XDG_CONFIG_DIRS, "/etc/xdg"),
      "/etc",
      env.XDG_DATA_HOME || path.join(home, ".local", "share"),
      ...split(env.XDG_DATA_DIRS, "/usr/local/share:/usr/share"),
      "/usr/local/share",
      "/usr/share",
    ]),
  ];
}

function listDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir).map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

/**
 * Vulkan drivers the loader can find on Linux: the files its env overrides list, then the ICD
 * manifests in the directories it searches. None: no Vulkan device can exist here.
 */
export function vulkanDriverFiles(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string[] {
  const listed = [env.VK_DRIVER_FILES, env.VK_ICD_FILENAMES, env.VK_ADD_DRIVER_FILES].flatMap((v) => (v ? v.split(":").filter(Boolean) : []));
  const manifests = icdSearchDirs(env, home).flatMap((d) => listDir(path.join(d, "vulkan", "icd.d")).filter((f) => f.endsWith(".json")));
  return [...listed, ...manifests];
}

/**
 * Whether the Vulkan loader has any driver to find on Linux: an env override is set, or an ICD
 * manifest is in a directory it searches (stops at the first).
 */
export function vulkanDriverListed(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): boolean {
  if (env.VK_DRIVER_FILES || env.VK_ICD_FILENAMES || env.VK_ADD_DRIVER_FILES) return true;
  return icdSearchDirs(env, home).some((d) => listDir(path.join(d, "vulkan", "icd.d")).some((f) => f.endsWith(".json")));
}
