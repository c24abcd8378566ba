/**
 * Backend choice: without the optional native packages (and without a GPU for webgpu) the
 * trainer runs on wasm and says why the others were skipped; a preference starts the search
 * lower; nonsense is refused. webgpu itself: backend-webgpu.test.ts.
 * Each case runs in a fresh process (the choice is per process).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import os from "node:os";
import { repoRoot } from "../helpers/cli.js";

function choose(prefer: string | null): { code: number | null; out: string; err: string } {
  const script = `
    import { initBackend } from "./trainer/backend.ts";
    import * as tf from "@tensorflow/tfjs-core";
    const lines = [];
    const c = await initBackend(${prefer === null ? "undefined" : JSON.stringify(prefer)}, (l) => lines.push(l));
    const s = tf.tidy(() => tf.sum(tf.matMul(tf.ones([2, 3]), tf.ones([3, 2]))).dataSync()[0]);
    console.log(JSON.stringify({ ...c, active: tf.getBackend(), s, lines }));`;
  const env = { ...process.env };
  delete env.CLAWRL_TF_BACKEND;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: repoRoot, encoding: "utf8", env, timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const nativeInstalled = (() => {
  try {
    createRequire(import.meta.url).resolve("@tensorflow/tfjs-node");
    return true;
  } catch {
    return false;
  }
})();

test(
  "default: the first backend that starts, with reasons for the ones skipped; it computes",
  { skip: nativeInstalled && "tfjs-node is installed here" },
  (t) => {
    const r = choose(null);
    assert.equal(r.code, 0, r.err);
    const c = JSON.parse(r.out.trim().split("\n").pop()!);
    if (c.name === "webgpu") {
      t.skip(`a GPU is here: ${c.device}`);
      return;
    }
    assert.equal(c.name, "wasm");
    assert.equal(c.active, "wasm");
    assert.match(c.device, /^wasm \(/);
    assert.equal(c.wasmHeapLimitBytes, 4294901760);
    assert.equal(c.memoryBytes, Math.min(os.totalmem(), 4294901760));
    assert.deepEqual(
      c.skipped.map((s: { name: string }) => s.name),
      ["tfjs-node-gpu", "webgpu", "tfjs-node"],
    );
    for (const s of c.skipped) assert.match(s.why, s.name === "webgpu" ? /^(no adapter|software adapter .*: slower than wasm|not installed)/ : /not installed/);
    assert.equal(c.s, 12);
    assert.ok(
      c.lines.some((l: string) => /skipped tfjs-node-gpu: not installed/.test(l)) && c.lines.some((l: string) => /trainer backend: wasm on wasm/.test(l)),
      c.lines.join("\n"),
    );
  },
);

test("prefer cpu: the plain JS backend, the others reported as not preferred", () => {
  const r = choose("cpu");
  assert.equal(r.code, 0, r.err);
  const c = JSON.parse(r.out.trim().split("\n").pop()!);
  assert.equal(c.active, "cpu");
  assert.equal(c.device, "js cpu");
  assert.equal(c.memoryBytes, os.totalmem());
  assert.deepEqual(
    c.skipped,
    ["tfjs-node-gpu", "webgpu", "tfjs-node", "wasm"].map((name) => ({ name, why: "not preferred" })),
  );
  assert.equal(c.s, 12);
});

test("an unknown backend name is refused", () => {
  const r = choose("tpu");
  assert.notEqual(r.code, 0);
  assert.match(r.err, /unknown tfjs backend "tpu" \(one of tfjs-node-gpu, webgpu, tfjs-node, wasm, cpu\)/);
});

test(
  "a crash after the wasm backend starts is reported by Node normally (not through Emscripten's 30 kB loader line)",
  { skip: nativeInstalled && "tfjs-node is installed here" },
  () => {
    const script = `
    import { initBackend } from "./trainer/backend.ts";
    await initBackend();
    setTimeout(() => { throw new Error("boom from the trainer"); }, 1);`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: repoRoot, encoding: "utf8", timeout: 120_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /Error: boom from the trainer/);
    assert.ok(r.stderr.length < 5000, `stderr is ${r.stderr.length} characters`);
  },
);
