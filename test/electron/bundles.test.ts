// `npm run build` output (CI runs it before the tests; run here if the bundles are missing):
// the three bundles exist, the preload is a self-contained CommonJS script (sandboxed preloads
// cannot load ES modules or anything but `electron`), and the bundled core entry runs under
// plain Node and comes up through the same supervisor main uses.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreSupervisor } from "../../electron/main/coreProcess.js";
import { repoRoot, tempDir } from "../helpers/cli.js";

const out = (...p: string[]) => path.join(repoRoot, "out", ...p);
const bundles = [out("main", "index.js"), out("main", "core.js"), out("preload", "index.cjs"), out("renderer", "index.html")];

before(() => {
  if (bundles.every((f) => fs.existsSync(f))) return;
  const r = spawnSync(process.execPath, [path.join(repoRoot, "scripts", "electron-vite.js"), "build"], { cwd: repoRoot, encoding: "utf8" });
  assert.equal(r.status, 0, `npm run build failed:\n${r.stdout}\n${r.stderr}`);
});

describe("build output", () => {
  it("has the main, core, preload and renderer bundles, and package.json's main points at main", () => {
    for (const f of bundles) assert.ok(fs.existsSync(f), `${path.relative(repoRoot, f)} exists (npm run build)`);
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { main: string };
    assert.equal(path.join(repoRoot, pkg.main), out("main", "index.js"));
  });

  it("the preload is CommonJS that requires only electron", () => {
    const code = fs.readFileSync(out("preload", "index.cjs"), "utf8");
    assert.doesNotMatch(code, /^\s*import\s|^\s*export\s/m, "no ES module syntax");
    const requires = [...code.matchAll(/require\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]);
    assert.deepEqual([...new Set(requires)], ["electron"]);
    assert.match(code, /exposeInMainWorld\(\s*"clawrl"/);
  });

  it("the main bundle never pulls the core in (the core runs in its own process)", () => {
    const code = fs.readFileSync(out("main", "index.js"), "utf8");
    assert.doesNotMatch(code, /from "fastify"|from "node-llama-cpp"/);
    assert.match(code, /core\.js/);
  });

  describe("the bundled core entry under plain Node", () => {
    const s = new CoreSupervisor({ entry: out("main", "core.js"), env: { ...process.env, CLAWRL_HOME: tempDir(), CLAWRL_UI_DIR: out("renderer") } });
    after(() => s.kill());
    it("reports ready, serves the built UI at its origin, and stops gracefully", async () => {
      const ep = await s.start();
      const res = await fetch(`${ep.url}/`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /<div id="root">/);
      // Data files the core reads at run time travel in the bundle (the catalog once did not: 500).
      const models = await fetch(`${ep.url}/api/models`, { headers: { authorization: `Bearer ${ep.token}` } });
      assert.equal(models.status, 200, await models.clone().text());
      const body = (await models.json()) as { catalog: Array<{ id: string }> };
      assert.ok(
        body.catalog.some((m) => m.id === "qwen3-1.7b"),
        "the shipped catalog is listed",
      );
      const r = await s.stop();
      assert.deepEqual([r.graceful, r.code], [true, 0]);
    });
  });
});
