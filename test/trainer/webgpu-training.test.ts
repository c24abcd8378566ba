/**
 * The trainer's own tests, again on the webgpu backend: the sliced head and the block-by-block
 * backward against plain autodiff (batched attention products there), parity with llama.cpp on the tiny
 * models (with and without an adapter trained on webgpu), learning measured under llama.cpp,
 * trainSteps (no leaks over 100 steps, micro-batches, top-k) and bit-identical resume. Without
 * a GPU this runs through a software adapter (OpenGL ES on Mesa llvmpipe: the fastest of the
 * software routes, see trainer/webgpu/dawn.ts); with no adapter at all it is skipped with the
 * reason. Each file runs in its own process with CLAWRL_TF_BACKEND=webgpu, as a user would.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";

const root = path.resolve(import.meta.dirname, "../..");
const FILES = ["model", "parity-tiny", "parity-tied", "parity-rope", "learning", "train-loop"].map((f) => `test/trainer/${f}.test.ts`);

/** The env that gets a webgpu backend here (fastest route first), or why none does. */
function webgpuEnv(): { env: NodeJS.ProcessEnv } | { skip: string } {
  const probe = `import { initBackend } from "./trainer/backend.ts"; const c = await initBackend("webgpu"); console.log(JSON.stringify(c));`;
  const reasons: string[] = [];
  for (const route of ["opengles", undefined]) {
    // Without NODE_TEST_CONTEXT: the children are test runs of their own, reporting to us as text.
    const { NODE_TEST_CONTEXT: _, ...base } = process.env;
    const env = { ...base, CLAWRL_TF_BACKEND: "webgpu", ...(route ? { CLAWRL_WEBGPU_ROUTE: route } : {}) };
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", probe], { cwd: root, env, encoding: "utf8", timeout: 60_000 });
    const line = r.stdout.split("\n").find((l) => l.startsWith("{"));
    const choice = line ? (JSON.parse(line) as { name: string; skipped: Array<{ name: string; why: string }> }) : null;
    if (choice?.name === "webgpu") return { env };
    reasons.push(`${route ?? "default"}: ${choice?.skipped.find((s) => s.name === "webgpu")?.why ?? r.stderr.trim().split("\n").pop()}`);
  }
  return { skip: `no webgpu adapter (${reasons.join("; ")})` };
}

const found = webgpuEnv();

for (const file of FILES) {
  test(`on webgpu: ${path.basename(file)}`, { skip: "skip" in found ? found.skip : false }, () => {
    if (!("env" in found)) return;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-reporter=spec", file], {
      cwd: root,
      env: found.env,
      encoding: "utf8",
      timeout: 600_000,
      maxBuffer: 32 * 2 ** 20,
    });
    const failures = r.stdout
      .split("\n")
      .filter((l) => /✖|Error/.test(l))
      .slice(0, 20)
      .join("\n");
    assert.equal(r.status, 0, `${file} failed on webgpu:\n${failures}\n${r.stderr.slice(-2000)}`);
    assert.match(r.stdout, /ℹ pass [1-9]/, "the file ran tests");
    assert.match(r.stdout, /ℹ fail 0/);
  });
}
