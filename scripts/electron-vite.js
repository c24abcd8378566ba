#!/usr/bin/env node
// Runs electron-vite. Where the `electron` package is absent (its binary download is blocked,
// so npm dropped the optional dependency), electron-vite cannot read Electron's version from
// it; we give it the major version this app targets, from package.json.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const require = createRequire(path.join(root, "package.json"));
const env = { ...process.env };
try {
  require.resolve("electron/package.json");
} catch {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const range = pkg.optionalDependencies?.electron ?? pkg.devDependencies?.electron ?? "";
  const major = /(\d+)/.exec(range)?.[1];
  if (!major) throw new Error("package.json names no electron version");
  env.ELECTRON_MAJOR_VER ??= major;
}
const bin = path.join(root, "node_modules", "electron-vite", "bin", "electron-vite.js");
const r = spawnSync(process.execPath, [bin, ...process.argv.slice(2)], { cwd: root, stdio: "inherit", env });
process.exit(r.status ?? 1);
