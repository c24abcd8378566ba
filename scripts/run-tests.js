#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts) with node's test runner through tsx, the same
// loader the app uses. Arguments filter by path substring: `npm test -- gguf server`.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const filters = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const passThrough = process.argv.slice(2).filter((a) => a.startsWith("-"));

function walk(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else if (/\.test\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

const files = walk(path.join(root, "test"))
  .map((f) => path.relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(" ") || "test/**/*.test.ts"}`);
  process.exit(1);
}
// One file at a time: several tests start real model servers and trainers, and the CI
// machine has two cores; parallel files would only make timings flaky.
const concurrency = process.env.CLAWRL_TEST_CONCURRENCY ?? "1";
const r = spawnSync(process.execPath, ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, "--test-reporter=spec", ...passThrough, ...files], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, CLAWRL_TEST: "1" },
});
process.exit(r.status ?? 1);
