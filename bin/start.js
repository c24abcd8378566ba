#!/usr/bin/env node
// `npm start`: the desktop app where Electron is installed; otherwise the headless core,
// serving the same UI to a browser at the printed URL.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const require = createRequire(path.join(root, "package.json"));
const args = process.argv.slice(2);

function electronBinary() {
  try {
    // The electron package's main export is the binary's path; it throws when the binary
    // was never downloaded.
    const p = require("electron");
    return typeof p === "string" && fs.existsSync(p) ? p : null;
  } catch {
    return null;
  }
}

function run(cmd, argv) {
  const child = spawn(cmd, argv, { cwd: root, stdio: "inherit" });
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

const electron = electronBinary();
if (electron) {
  run(process.execPath, [path.join(root, "scripts", "electron-vite.js"), "preview", ...args]);
} else {
  console.log("Electron is not installed (its binary download failed or was skipped): starting the headless core; open the URL below in a browser.");
  if (!fs.existsSync(path.join(root, "out", "renderer", "index.html"))) {
    const r = spawnSync(
      process.execPath,
      [path.join(root, "node_modules", "vite", "bin", "vite.js"), "build", "--config", "renderer/vite.config.ts", "--logLevel", "warn"],
      { cwd: root, stdio: "inherit" },
    );
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  run(process.execPath, [path.join(root, "bin", "clawrl"), "serve", ...args]);
}
