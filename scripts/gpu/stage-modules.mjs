#!/usr/bin/env node
/**
 * Copies the node_modules that `clawrl doctor` and bench/trainer-real-size.ts need on a
 * linux-x64 GPU machine into DEST/node_modules, pruned to fit the device call's 64 MiB:
 * the runtime dependency closure of the packages below (package.json "dependencies" and
 * installed "optionalDependencies", resolved as Node does), without source maps, type
 * declarations, tests and docs; node-llama-cpp without its llama.cpp source bundle; only the
 * linux-x64 CPU and Vulkan prebuilt binaries (CUDA's 181 MB cannot travel); Dawn for linux-x64
 * only. Identical files (the CPU kernels both llama.cpp builds ship) become hard links, which
 * tar stores once.
 *
 *   node scripts/gpu/stage-modules.mjs SRC_ROOT DEST
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";

const [srcRoot, dest] = process.argv.slice(2);
if (!srcRoot || !dest) {
  console.error("usage: stage-modules.mjs SRC_ROOT DEST");
  process.exit(2);
}
const NM = path.join(srcRoot, "node_modules");

/**
 * What the doctor's probes and the trainer bench load (found by tracing a doctor run), every
 * package.json "dependencies" entry (bench/server-vs-direct.ts starts a real core: fastify,
 * lowdb, undici, the MCP SDK, ...), and `openai`, the devDependency its client child imports.
 */
const ROOTS = [
  ...new Set([
    "tsx",
    "zod",
    "node-llama-cpp",
    "@node-llama-cpp/linux-x64",
    "@node-llama-cpp/linux-x64-vulkan",
    "@tensorflow/tfjs-core",
    "@tensorflow/tfjs-backend-cpu",
    "@tensorflow/tfjs-backend-wasm",
    "@tensorflow/tfjs-backend-webgpu",
    "webgpu",
    "seedrandom",
    "long",
    ...Object.keys(JSON.parse(fs.readFileSync(path.join(srcRoot, "package.json"), "utf8")).dependencies ?? {}),
    "openai",
  ]),
];
/**
 * Optional dependencies never taken (other platforms, CUDA), and the attachments' PDF reader
 * (pdfjs-dist with its optional canvas, ~50 MB: imported only when a PDF is attached, which no
 * GPU run does).
 */
const SKIP = new Set([
  "fsevents",
  "pdfjs-dist",
  "@napi-rs/canvas",
  "@napi-rs/canvas-linux-x64-gnu",
  "@node-llama-cpp/linux-arm64",
  "@node-llama-cpp/linux-armv7l",
  "@node-llama-cpp/linux-x64-cuda",
  "@node-llama-cpp/linux-x64-cuda-ext",
  "@node-llama-cpp/mac-arm64-metal",
  "@node-llama-cpp/mac-x64",
  "@node-llama-cpp/win-arm64",
  "@node-llama-cpp/win-x64",
  "@node-llama-cpp/win-x64-cuda",
  "@node-llama-cpp/win-x64-cuda-ext",
  "@node-llama-cpp/win-x64-vulkan",
]);

/** Node's lookup: DIR/node_modules/NAME, then each parent's. */
function resolvePkg(name, fromDir) {
  let dir = fromDir;
  for (;;) {
    const cand = path.join(dir, "node_modules", name);
    if (fs.existsSync(path.join(cand, "package.json"))) return cand;
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

const pkgDirs = new Set();
const queue = ROOTS.filter((n) => !SKIP.has(n)).map((n) => {
  const d = resolvePkg(n, srcRoot);
  if (!d) throw new Error(`not installed: ${n}`);
  return d;
});
while (queue.length) {
  const dir = queue.pop();
  if (pkgDirs.has(dir)) continue;
  pkgDirs.add(dir);
  const pj = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const deps = { ...(pj.dependencies ?? {}), ...(pj.optionalDependencies ?? {}) };
  for (const name of Object.keys(deps)) {
    if (SKIP.has(name) || name.startsWith("@node-llama-cpp/")) continue;
    const d = resolvePkg(name, dir);
    if (d) queue.push(d);
    else if (!(pj.optionalDependencies ?? {})[name]) console.error(`warning: ${path.relative(NM, dir)} needs ${name}, not installed`);
  }
}

const DROP_FILE = /(\.map|\.d\.ts|\.d\.mts|\.d\.cts|\.tsbuildinfo|\.md|\.markdown)$/i;
/** tfjs ships every bundle flavour; Node loads dist/*.node.js (main) and the ESM files under dist/. */
const DROP_TFJS = /(_test\.js|\.min\.js|\.es2017\.js|\.fesm\.js|\.esm\.js)$/;
const DROP_DIR = new Set(["test", "tests", "__tests__", "docs", "example", "examples", ".github"]);
function dropped(rel, pkg) {
  const base = path.basename(rel);
  if (DROP_FILE.test(base) && base !== "package.json") return true;
  if (rel.split(path.sep).some((p) => DROP_DIR.has(p))) return true;
  if (pkg === "node-llama-cpp" && /^llama[\\/](gitRelease\.bundle|llama\.cpp|xpack|toolchains|patches|profiles|cmake|addon)/.test(rel)) return true;
  if (pkg === "webgpu" && /^dist[\\/]/.test(rel) && !/^dist[\\/]linux-x64/.test(rel)) return true;
  if (pkg.startsWith("@node-llama-cpp/") && base === "_nlcBuildMetadata.json") return false;
  if (pkg.startsWith("@tensorflow/") && DROP_TFJS.test(base)) return true;
  if (pkg.startsWith("@tensorflow/") && /^dist[\\/](tf-[a-z-]+|tfjs-[a-z-]+)\.js$/.test(rel) && !rel.endsWith(".node.js")) return true;
  if (pkg.startsWith("@tensorflow/") && /^dist[\\/]miniprogram/.test(rel)) return true;
  return false;
}

const seen = new Map(); // hash -> dest path
let files = 0;
let bytes = 0;
let linked = 0;
function copyTree(src, dst, pkg, rel = "") {
  for (const ent of fs.readdirSync(path.join(src, rel), { withFileTypes: true })) {
    const r = path.join(rel, ent.name);
    if (ent.isDirectory()) {
      if (ent.name === "node_modules") continue; // nested packages come through the closure
      if (dropped(r + path.sep, pkg) && DROP_DIR.has(ent.name)) continue;
      copyTree(src, dst, pkg, r);
      continue;
    }
    if (dropped(r, pkg)) continue;
    const from = path.join(src, r);
    const to = path.join(dst, r);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    if (ent.isSymbolicLink()) {
      fs.symlinkSync(fs.readlinkSync(from), to);
      continue;
    }
    const st = fs.statSync(from);
    if (st.size > 256 * 1024) {
      const h = crypto.createHash("sha1").update(fs.readFileSync(from)).digest("hex");
      const prev = seen.get(h);
      if (prev) {
        fs.linkSync(prev, to);
        linked++;
        continue;
      }
      seen.set(h, to);
    }
    fs.copyFileSync(from, to);
    fs.chmodSync(to, st.mode & 0o777);
    files++;
    bytes += st.size;
  }
}

for (const dir of [...pkgDirs].sort()) {
  const rel = path.relative(srcRoot, dir); // node_modules/a/node_modules/b keeps its nesting
  const pkg = rel.split(path.sep).slice(-2)[0].startsWith("@") ? rel.split(path.sep).slice(-2).join("/") : path.basename(rel);
  copyTree(dir, path.join(dest, rel), pkg);
}
console.error(`staged ${pkgDirs.size} packages: ${files} files, ${(bytes / 2 ** 20).toFixed(1)} MiB (+${linked} hard links)`);
