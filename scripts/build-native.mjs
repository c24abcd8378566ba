#!/usr/bin/env node
// Builds the CPU trainer's native matrix products and AdamW update (trainer/native/gemm/*.cc) into
// trainer/native/build/gemm.node with the system's C++ compiler, against the Node-API headers
// (npm: node-api-headers, else Node's own include/node). Runs at `npm install` (postinstall).
//
// Never fails the install: without a compiler (or on Windows, where this script does not
// drive MSVC) it says so and exits 0, and the trainer keeps its WebAssembly products
// (trainer/native/gemm.ts falls back). `--check` exits 1 instead when nothing was built.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const src = path.join(root, "trainer", "native", "gemm");
const outDir = path.join(root, "trainer", "native", "build");
const out = path.join(outDir, "gemm.node");
const strict = process.argv.includes("--check");

function skip(why) {
  console.log(`clawrl: native trainer products not built (${why}); the trainer uses WebAssembly's.`);
  process.exit(strict ? 1 : 0);
}

function headersDir() {
  try {
    const pkg = createRequire(import.meta.url).resolve("node-api-headers/package.json");
    const dir = path.join(path.dirname(pkg), "include");
    if (fs.existsSync(path.join(dir, "node_api.h"))) return dir;
  } catch {
    // not installed: try Node's own headers below
  }
  const own = path.join(path.dirname(process.execPath), "..", "include", "node");
  return fs.existsSync(path.join(own, "node_api.h")) ? own : null;
}

function compiler() {
  for (const cxx of [process.env.CXX, "g++", "clang++", "c++"].filter(Boolean)) {
    if (spawnSync(cxx, ["--version"], { stdio: "ignore" }).status === 0) return cxx;
  }
  return null;
}

function run(cxx, args) {
  const r = spawnSync(cxx, args, { stdio: ["ignore", "inherit", "pipe"], encoding: "utf8" });
  if (r.status !== 0) skip(`${cxx} failed: ${(r.stderr || r.error?.message || "").trim().split("\n").slice(-6).join("\n")}`);
}

if (process.env.CLAWRL_SKIP_NATIVE === "1") skip("CLAWRL_SKIP_NATIVE=1");
if (process.platform === "win32") skip("Windows builds need node-gyp and MSVC, not set up here");
const cxx = compiler();
if (!cxx) skip("no C++ compiler: install g++ or clang++ and run `npm run build:native`");
const include = headersDir();
if (!include) skip("no Node-API headers found");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-gemm-"));
try {
  const common = ["-O3", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-Wno-psabi", `-I${include}`, `-I${src}`];
  const objects = [];
  // Kernels (products, SwiGLU, RMSNorm, RoPE) once per instruction set; addon.cc picks one at load by what the CPU has.
  const variants = [{ ns: "generic", flags: [] }];
  if (process.arch === "x64") variants.push({ ns: "avx2", flags: ["-mavx2", "-mfma"] });
  for (const v of variants) {
    for (const file of ["kernels", "activations", "norm", "rope"]) {
      const o = path.join(tmp, `${file}-${v.ns}.o`);
      run(cxx, [...common, ...v.flags, `-DKERNEL_NS=${v.ns}`, "-c", path.join(src, `${file}.cc`), "-o", o]);
      objects.push(o);
    }
  }
  // AdamW's loop once, without fused multiply-adds: it must round as its JavaScript twin does.
  // -fno-math-errno lets the loop vectorize (sqrt sets no errno; its result is the same).
  const adamwObj = path.join(tmp, "adamw.o");
  run(cxx, [...common, "-ffp-contract=off", "-fno-math-errno", "-c", path.join(src, "adamw.cc"), "-o", adamwObj]);
  objects.push(adamwObj);
  const addonObj = path.join(tmp, "addon.o");
  run(cxx, [...common, "-DNODE_GYP_MODULE_NAME=clawrl_gemm", "-c", path.join(src, "addon.cc"), "-o", addonObj]);
  const link = process.platform === "darwin" ? ["-bundle", "-undefined", "dynamic_lookup"] : ["-shared", "-pthread"];
  fs.mkdirSync(outDir, { recursive: true });
  // Written beside and renamed: a running trainer never loads a half-written file.
  const partial = `${out}.${process.pid}.tmp`;
  run(cxx, [...link, addonObj, ...objects, "-o", partial]);
  fs.renameSync(partial, out);
  console.log(`clawrl: built ${path.relative(root, out)} (${variants.map((v) => v.ns).join(" + ")})`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
