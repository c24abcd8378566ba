// The package's scripts point at files that exist (`npm run bench` once named a missing one), and
// the bench runner lists every benchmark and refuses an unknown name.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { repoRoot } from "../helpers/cli.js";

test("every npm script that runs a repository file names one that exists", () => {
  const scripts = (JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  const files = Object.values(scripts).flatMap((s) => [...s.matchAll(/\b((?:scripts|bin|bench)\/[\w./-]+\.(?:js|mjs|ts))\b/g)].map((m) => m[1]));
  assert.ok(files.includes("scripts/run-bench.js"));
  for (const f of files) assert.ok(fs.existsSync(path.join(repoRoot, f)), `package.json names ${f}, which does not exist`);
});

test("npm run bench lists every benchmark with what it measures, and refuses an unknown name", () => {
  const list = spawnSync(process.execPath, [path.join(repoRoot, "scripts", "run-bench.js")], { encoding: "utf8" });
  assert.equal(list.status, 0, list.stderr);
  for (const f of fs.readdirSync(path.join(repoRoot, "bench")).filter((x) => x.endsWith(".ts"))) {
    assert.match(list.stdout, new RegExp(`^  ${f.slice(0, -3)} +\\S`, "m"), `${f} is listed with its summary`);
  }
  const bad = spawnSync(process.execPath, [path.join(repoRoot, "scripts", "run-bench.js"), "no-such-bench"], { encoding: "utf8" });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /no benchmark named no-such-bench/);
});
