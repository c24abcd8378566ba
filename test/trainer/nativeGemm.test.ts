/**
 * The native products of the frozen weights (trainer/native/gemm.ts): built at install where a
 * C++ compiler is (CI has g++), equal to a float64 reference on every edge of their tiling,
 * the same on one thread and several, and refusing bad arguments with a clear error. The model
 * tests (model.test.ts) check the trainer's gradients through them against plain autodiff.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { isHostMatrix, mm } from "../../trainer/model/fast-matmul.js";
import { loadBaseModel } from "../../trainer/model/index.js";
import { alignedFloats, nativeGemmStatus, nativeProductsFor, type NativeGemm } from "../../trainer/native/gemm.js";
import { ensureShapeModel } from "../../models/tiny/shapeCache.js";
import { fill } from "../../common/random/fill.js";

const root = path.resolve(import.meta.dirname, "..", "..");

function loaded(): NativeGemm {
  const s = nativeGemmStatus();
  // npm install builds it (scripts/build-native.mjs); only an explicit opt-out may skip that.
  assert.ok(s.loaded, `the native products did not load: ${s.loaded ? "" : s.why}`);
  return s.gemm;
}

type Form = "nt" | "nn" | "tn";

/** Largest error relative to Σ|a·b| (the product's own scale), against float64. */
function check(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, form: Form): number {
  let worst = 0;
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      let mag = 0;
      for (let q = 0; q < k; q++) {
        const p = (form === "tn" ? a[q * m + i] : a[i * k + q]) * (form === "nt" ? b[j * k + q] : b[q * n + j]);
        s += p;
        mag += Math.abs(p);
      }
      worst = Math.max(worst, Math.abs(c[i * n + j] - s) / Math.max(mag, 1e-30));
    }
  return worst;
}

test(
  "native products equal a float64 reference on every tile edge, on one thread and two",
  { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" },
  () => {
    const g = loaded();
    assert.match(g.isa, /^(avx2|generic)$/);
    // m around the row tiles (3, 6), n around the column tiles (4, 16) and a thread split, k
    // around the vector width (8) and the K blocks (nn 256, nt 1024), n past a packed block of
    // columns (256).
    const shapes = [
      [1, 1, 1],
      [5, 17, 9],
      [7, 37, 13],
      [13, 33, 600],
      [6, 16, 8],
      [4, 50, 257],
      [9, 70, 1030],
      [20, 300, 520],
      // nn's packed panels (128 columns or more a thread): an edge of 1 column, several blocks.
      [7, 129, 300],
      [30, 700, 270],
      // nt's route through nn: few columns, at least 4 rows each (one thread, then two).
      [130, 17, 300],
      [200, 40, 300],
      // nt's route through nn for a short K (≤ 32), however wide; tn's transposed route (≤ 32
      // columns, at least 4 rows each), a thread's share of its rows past a packed block.
      [128, 900, 16],
      [37, 300, 32],
      [900, 16, 128],
      [700, 5, 33],
    ];
    try {
      for (const threads of [1, 2]) {
        g.setThreads(threads);
        for (const [m, n, k] of shapes) {
          const a = fill(m * k, m + 7 * n + 13 * k);
          const b = fill(n * k, 3 * m + n + k);
          for (const form of ["nt", "nn", "tn"] as const) {
            const c = new Float32Array(m * n).fill(Number.NaN);
            g[form](a, b, c, m, n, k);
            const err = check(c, a, b, m, n, k, form);
            assert.ok(err < 1e-5, `${form} [${m},${k}]·[${k},${n}] on ${threads} thread(s): relative error ${err}`);
          }
        }
      }
    } finally {
      g.setThreads(g.hardwareThreads);
    }
  },
);

test(
  "a product's bits do not depend on the thread count (a replay on one thread reproduces an adapter trained on two)",
  { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" },
  () => {
    const g = loaded();
    // Around nt's narrow route (≤ 128 columns, ≥ 4 rows each), whose rounding differs from its
    // panels': with the route chosen by a thread's share, these came out different. nn packs B
    // where a thread has 128 columns or more: [1300, 200, 1500] packs on one thread, not on two.
    const shapes = [
      [400, 172, 64],
      [1300, 200, 1500],
      [600, 140, 300],
      // The route taken, its columns split over two threads.
      [1300, 100, 64],
      // nt's short-K route and tn's transposed one (its rows split over two threads).
      [128, 4864, 16],
      [4864, 16, 128],
    ];
    try {
      for (const [m, n, k] of shapes) {
        const a = fill(m * k, m + n);
        const b = fill(n * k, n + k);
        for (const form of ["nt", "nn", "tn"] as const) {
          const out = [1, 2].map((threads) => {
            g.setThreads(threads);
            const c = new Float32Array(m * n);
            g[form](a, b, c, m, n, k);
            return c;
          });
          assert.ok(
            out[0].every((v, i) => Object.is(v, out[1][i])),
            `${form} [${m},${k}]·[${k},${n}]: one thread and two differ`,
          );
        }
      }
    } finally {
      g.setThreads(g.hardwareThreads);
    }
  },
);

test("accumulating adds the product to what c held, on every route", { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" }, () => {
  const g = loaded();
  assert.ok(g.accumulates, "this build adds into its output");
  // The panels, nt's narrow and short-K routes through nn, nn packed, tn's transposed route.
  for (const [m, n, k] of [
    [20, 300, 520],
    [200, 40, 300],
    [128, 900, 16],
    [900, 16, 128],
  ]) {
    const a = fill(m * k, m + k);
    const b = fill(n * k, n + 3 * k);
    const c0 = fill(m * n, m + n);
    for (const form of ["nt", "nn", "tn"] as const) {
      const plain = new Float32Array(m * n);
      g[form](a, b, plain, m, n, k);
      const c = c0.slice();
      g[form](a, b, c, m, n, k, true);
      const worst = c.reduce((w, v, i) => Math.max(w, Math.abs(v - (c0[i] + plain[i])) / (1 + Math.abs(c0[i]) + Math.abs(plain[i]))), 0);
      // Rounding apart (nn adds into c as it goes, the others add their sum at the end): an
      // overwritten or doubled c is off by ~0.3.
      assert.ok(worst < 2e-5, `${form} [${m},${k}]·[${k},${n}] accumulating: off by ${worst}`);
    }
  }
});

test("a product with k = 0 is zeros, and an empty one writes nothing", { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" }, () => {
  const g = loaded();
  const c = new Float32Array(6).fill(5);
  g.nt(new Float32Array(0), new Float32Array(0), c, 2, 3, 0);
  assert.deepEqual([...c], [0, 0, 0, 0, 0, 0]);
  c.fill(5);
  g.nn(new Float32Array(0), new Float32Array(12), c, 0, 3, 4);
  assert.deepEqual([...c], [5, 5, 5, 5, 5, 5]);
  g.tn(new Float32Array(0), new Float32Array(0), c, 2, 3, 0);
  assert.deepEqual([...c], [0, 0, 0, 0, 0, 0]);
});

test(
  "bad arguments are refused with what was expected, before anything is written",
  { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" },
  () => {
    const g = loaded();
    const c = new Float32Array(3).fill(7);
    assert.throws(() => g.nt(new Float32Array(4), new Float32Array(6), c, 2, 3, 2), {
      code: "CLAWRL_GEMM",
      message: /needs arrays of 4, 6 and 6 floats; got 4, 6, 3/,
    });
    assert.deepEqual([...c], [7, 7, 7]);
    assert.throws(() => g.tn(new Float32Array(3), new Float32Array(6), c, 2, 3, 2), {
      message: /a product of \[2,2\]ᵀ by \[2,3\] needs arrays of 4, 6 and 6 floats; got 3, 6, 3/,
    });
    assert.deepEqual([...c], [7, 7, 7]);
    assert.throws(() => g.nn(new Float64Array(4) as unknown as Float32Array, new Float32Array(4), new Float32Array(4), 2, 2, 2), {
      message: /must be Float32Arrays/,
    });
    assert.throws(() => g.nn(new Float32Array(4), new Float32Array(4), new Float32Array(4), 2, -1, 2), { message: /non-negative integers/ });
    assert.throws(() => g.setThreads(0), { message: /positive integer/ });
  },
);

test("the build never fails an install: without a compiler it says why and exits 0 (--check: 1)", () => {
  const env = { ...process.env, CLAWRL_SKIP_NATIVE: "1" };
  const soft = spawnSync(process.execPath, [path.join(root, "scripts", "build-native.mjs")], { env, encoding: "utf8" });
  assert.equal(soft.status, 0, soft.stderr);
  assert.match(soft.stdout, /native trainer products not built \(CLAWRL_SKIP_NATIVE=1\); the trainer uses WebAssembly's/);
  const strict = spawnSync(process.execPath, [path.join(root, "scripts", "build-native.mjs"), "--check"], { env, encoding: "utf8" });
  assert.equal(strict.status, 1);
});

/** nativeGemmStatus() and nativeProductsFor("wasm") in a fresh process with CLAWRL_GEMM_ADDON = addon. */
function statusWith(addon: string): { s: { loaded: boolean; why: string }; p: unknown } {
  const script = `
    import { nativeGemmStatus, nativeProductsFor } from ${JSON.stringify(path.join(root, "trainer", "native", "gemm.ts"))};
    console.log(JSON.stringify({ s: nativeGemmStatus(), p: nativeProductsFor("wasm") }));`;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { ...process.env, CLAWRL_GEMM_ADDON: addon },
    encoding: "utf8",
    cwd: root,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as { s: { loaded: boolean; why: string }; p: unknown };
}

test("an addon that does not load leaves the trainer on the backend's products, saying why", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-gemm-test-"));
  try {
    const corrupt = path.join(dir, "gemm.node");
    fs.writeFileSync(corrupt, "not a shared library");
    const a = statusWith(corrupt);
    assert.equal(a.s.loaded, false);
    assert.match(a.s.why, /gemm\.node did not load/);
    assert.equal(a.p, null);
    // Something that loads but is not the addon (a JSON file through require).
    const b = statusWith(path.join(root, "package.json"));
    assert.equal(b.s.loaded, false);
    assert.match(b.s.why, /package\.json is not the native products addon/);
    assert.equal(b.p, null);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test(
  "a LoRA factor's gradient through the native products equals tfjs's own product",
  { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" },
  async () => {
    loaded();
    await initBackend();
    assert.ok(nativeProductsFor(tf.getBackend()), `the trainer's default backend here (${tf.getBackend()}) uses the native products`);
    // x·A·B at a LoRA's shapes, large enough that both factor gradients take the native path.
    const [rows, d, r, out] = [300, 200, 16, 1000];
    const x = tf.tensor2d(fill(rows * d, 1), [rows, d]);
    const A = tf.tensor2d(fill(d * r, 2), [d, r]);
    const B = tf.tensor2d(fill(r * out, 3), [r, out]);
    const dy = tf.tensor2d(fill(rows * out, 4), [rows, out]);
    const [gA, gB] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(mm(mm(x, a as tf.Tensor2D), b as tf.Tensor2D), dy)))([A, B]);
    // The same gradients with tfjs's own products: dB = (xA)ᵀ·dy, dA = xᵀ·(dy·Bᵀ).
    const xa = tf.matMul(x, A);
    const refB = tf.matMul(tf.transpose(xa), dy);
    const refA = tf.matMul(tf.transpose(x), tf.matMul(dy, tf.transpose(B)));
    for (const [got, ref, what] of [
      [gA, refA, "dA"],
      [gB, refB, "dB"],
    ] as const) {
      const scale = tf.max(tf.abs(ref)).dataSync()[0];
      const err = tf.max(tf.abs(tf.sub(got, ref))).dataSync()[0];
      assert.ok(err <= 1e-5 * scale, `${what}: max error ${err} against a scale of ${scale}`);
    }
    tf.dispose([x, A, B, dy, gA, gB, xa, refA, refB]);
  },
);

test(
  "frozen weights held as host f32 start a cache line (alignedFloats), as do their rows",
  { skip: process.env.CLAWRL_SKIP_NATIVE === "1" && "CLAWRL_SKIP_NATIVE=1" },
  async () => {
    const g = loaded();
    // A plain large array is where malloc puts it (16 bytes past a line here); the aligned one is not.
    for (const n of [1, 17, 4096, 1 << 20]) {
      const x = alignedFloats(n);
      assert.equal(x.length, n);
      assert.equal(g.misalignment!(x), 0, `alignedFloats(${n}) starts a line`);
      assert.ok(x.every((v) => v === 0));
    }
    await initBackend("wasm");
    const file = ensureShapeModel("qwen2.5-0.5b", "q8_0", { layers: 1 });
    const model = await loadBaseModel(file, { placement: { layers: "host-f32", head: "host-f32" } });
    try {
      const w = model.weights.layer(0);
      try {
        for (const [name, m] of Object.entries(w.linear)) {
          assert.ok(isHostMatrix(m), `${name} is a host weight`);
          assert.equal(g.misalignment!(m.data), 0, `${name} starts a line`);
        }
      } finally {
        model.weights.releaseLayer(w);
      }
      const head = model.weights.headChunk(1).w;
      assert.ok(isHostMatrix(head));
      assert.equal(g.misalignment!(head.data), 0, "the head's second slice starts a line");
    } finally {
      model.dispose();
    }
  },
);
