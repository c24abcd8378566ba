import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { repoRoot } from "../helpers/cli.js";

/**
 * The real OpenClaw client, installed from npm into the git-ignored `.cache/openclaw/` with its
 * own Node (the npm package `node`; OpenClaw needs Node >= 24.16 and the machine's Node is
 * never replaced). Installed once and reused between runs; a failed install throws (a test
 * that needs the client must fail, not skip).
 */
export const OPENCLAW_VERSION = "2026.9.6";
export const NODE_VERSION = "24.21.0";

export interface OpenclawInstall {
  /** The Node 24 binary that runs OpenClaw. */
  node: string;
  /** OpenClaw's CLI entry (run as `node <entry> agent …`). */
  entry: string;
  dir: string;
}

const installDir = path.join(repoRoot, ".cache", "openclaw", `openclaw-${OPENCLAW_VERSION}-node-${NODE_VERSION}`);

function paths(dir: string): OpenclawInstall {
  return { node: path.join(dir, "node_modules", ".bin", "node"), entry: path.join(dir, "node_modules", "openclaw", "openclaw.mjs"), dir };
}

function installedVersion(p: OpenclawInstall): string | null {
  const r = spawnSync(p.node, [p.entry, "--version"], { encoding: "utf8", timeout: 60_000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

function npm(dir: string, pkgs: string[], pathPrefix: string | null): void {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: "false" };
  if (pathPrefix) env.PATH = `${pathPrefix}${path.delimiter}${process.env.PATH ?? ""}`;
  const r = spawnSync("npm", ["install", "--prefix", dir, "--no-audit", "--no-fund", "--save-exact", ...pkgs], {
    encoding: "utf8",
    env,
    timeout: 15 * 60_000,
  });
  if (r.status !== 0) {
    const tail = `${r.stdout ?? ""}${r.stderr ?? ""}`.trim().split("\n").slice(-15).join("\n");
    throw new Error(`npm install ${pkgs.join(" ")} failed (${r.error ? r.error.message : `exit ${r.status}`}):\n${tail}`);
  }
}

/** Installs (first time) and returns the OpenClaw client; throws with npm's output when that is impossible. */
export function ensureOpenclaw(): OpenclawInstall {
  const done = paths(installDir);
  if (fs.existsSync(done.entry) && installedVersion(done)?.includes(OPENCLAW_VERSION)) return done;
  // Install into a private temp dir, then rename into place: a half-done install is never reused.
  fs.mkdirSync(path.dirname(installDir), { recursive: true });
  const tmp = `${installDir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  try {
    // Node first: OpenClaw's own install scripts refuse to run under an older `node`, so they
    // must find Node 24 first on PATH (npm puts the prefix's node_modules/.bin there too).
    npm(tmp, [`node@${NODE_VERSION}`], null);
    const t = paths(tmp);
    npm(tmp, [`node@${NODE_VERSION}`, `openclaw@${OPENCLAW_VERSION}`], path.dirname(t.node));
    const v = installedVersion(t);
    if (!v?.includes(OPENCLAW_VERSION)) throw new Error(`installed OpenClaw does not run: '${t.node} ${t.entry} --version' printed ${JSON.stringify(v)}`);
    fs.rmSync(installDir, { recursive: true, force: true });
    fs.renameSync(tmp, installDir);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`cannot install OpenClaw ${OPENCLAW_VERSION} with Node ${NODE_VERSION} from npm: ${(err as Error).message}`, { cause: err });
  }
  return paths(installDir);
}

// `node --import tsx test/openclaw/installOpenclaw.ts` installs it (CI does this before the tests).
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const p = ensureOpenclaw();
  console.log(`OpenClaw ${OPENCLAW_VERSION} ready: ${p.node} ${p.entry}`);
}
