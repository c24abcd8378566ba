/**
 * The webgpu backend (Dawn + tfjs-backend-webgpu). Without a GPU it runs on software adapters:
 * Vulkan through Chromium's SwiftShader and OpenGL ES through Mesa's llvmpipe (.ci/run installs
 * both). On each: a 256² matMul against a float64 reference, gradients and the ops a llama
 * block uses against the cpu backend, flat memory over 20 steps, GPU bytes freed on dispose,
 * the explained failure of synchronous reads, the default pick skipping the software adapter
 * and an explicit request using it. Each backend runs in a child process (one tfjs engine per
 * process). A route is skipped, with the reason, only when no adapter at all can be created
 * there; anything else that goes wrong fails. The fake-Dawn tests need no adapter.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { repoRoot, runCli, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { vulkanDriverListed } from "../../common/vulkanDrivers.js";
import { openDawn, softwareRenderer, type AdapterSummary, type GpuAdapterLike, type GpuDeviceLike, type GpuLike } from "../../trainer/webgpu/dawn.js";
import { matmulInputs, MATMUL_N, type MemoryTrace, type Results } from "./webgpu-cases.js";

interface Choice {
  name: string;
  device: string;
  skipped: Array<{ name: string; why: string }>;
  webgpu?: AdapterSummary;
}
interface ChildOut {
  choice?: Choice;
  lines?: string[];
  active?: string;
  ops?: Results;
  grads?: Results;
  matmul?: number[];
  memory?: MemoryTrace;
  syncRead?: { ok?: number[]; error?: string };
  gpuError?: { okBefore: number[]; after?: number[]; error?: string };
  deviceLost?: { after?: number[]; error?: string };
  ms?: Record<string, number>;
  error?: string;
}

const cache = new Map<string, ChildOut>();

function child(prefer: string, cases: string, env: Record<string, string> = {}): ChildOut {
  const key = JSON.stringify([prefer, cases, env]);
  const hit = cache.get(key);
  if (hit) return hit;
  const e: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete e.CLAWRL_TF_BACKEND;
  if (!env.CLAWRL_WEBGPU_ROUTE) delete e.CLAWRL_WEBGPU_ROUTE;
  const r = spawnSync(process.execPath, ["--import", "tsx", path.join("test", "trainer", "webgpu-child.ts"), prefer, cases], {
    cwd: repoRoot,
    encoding: "utf8",
    env: e,
    timeout: 300_000,
    maxBuffer: 64 << 20,
  });
  const line = r.stdout.trim().split("\n").pop() ?? "";
  let out: ChildOut;
  try {
    out = JSON.parse(line) as ChildOut;
  } catch {
    throw new Error(`child ${prefer} ${cases} exited ${r.status} ${r.signal ?? ""} without a result:\n${r.stderr.slice(-3000)}`);
  }
  cache.set(key, out);
  return out;
}

const ALL = "choice,ops,grads,matmul,memory,syncRead,gpuError,deviceLost";
const cpu = () => {
  const out = child("cpu", "choice,ops,grads");
  assert.equal(out.error, undefined, out.error);
  return out;
};

/** Differences beyond |a − b| ≤ tol·max(1, |b|), per named result. */
function mismatches(got: Results, want: Results, tol: number): string[] {
  const bad: string[] = [];
  for (const [name, w] of Object.entries(want)) {
    const g = got[name];
    if (!g || g.length !== w.length) {
      bad.push(`${name}: ${g ? `${g.length} values, want ${w.length}` : "missing"}`);
      continue;
    }
    let worst = 0;
    let at = 0;
    for (let i = 0; i < w.length; i++) {
      const d = Math.abs(g[i] - w[i]) / Math.max(1, Math.abs(w[i]));
      if (!(d <= worst)) [worst, at] = [d, i];
    }
    if (!(worst <= tol)) bad.push(`${name}: [${at}] ${g[at]} vs ${w[at]} (${worst.toExponential(2)})`);
  }
  return bad;
}

/** Forced software routes, and Dawn's own pick (a GPU where there is one; skipped here). */
const ROUTES: Array<{ route: string; software?: string; backend?: string }> = [
  { route: "swiftshader", software: "SwiftShader", backend: "vulkan" },
  { route: "opengles", software: "llvmpipe", backend: "opengles" },
  { route: "default" },
];

for (const { route, software, backend } of ROUTES) {
  const env = { CLAWRL_WEBGPU_ROUTE: route };
  /** The run on this route, or the reason to skip it (no adapter at all there). */
  const run = (): { out: ChildOut } | { skip: string } => {
    const out = child("webgpu", ALL, env);
    assert.equal(out.error, undefined, out.error);
    if (out.choice!.name !== "webgpu") {
      const why = out.choice!.skipped.find((s) => s.name === "webgpu")?.why ?? "?";
      if (/^(no adapter|not installed|Dawn failed to load)/.test(why)) return { skip: `webgpu via ${route}: ${why}` };
      assert.fail(`webgpu via ${route} has an adapter but did not start: ${why}`);
    }
    return { out };
  };
  const gpuTest = (name: string, body: (out: ChildOut) => void): void => {
    test(`webgpu via ${route}: ${name}`, (t) => {
      const r = run();
      if ("skip" in r) return void t.skip(r.skip);
      body(r.out);
    });
  };

  gpuTest(`an explicit request uses ${software ? `${software} and says it is software` : "the adapter Dawn finds"}`, (out) => {
    const c = out.choice!;
    assert.equal(out.active, "webgpu");
    if (software) {
      assert.equal(c.device, `webgpu (${software}, software)`);
      assert.equal(c.webgpu?.software, software);
      assert.equal(c.webgpu?.backend, backend);
    } else {
      assert.equal(c.device, `webgpu (${c.webgpu!.software ?? c.webgpu!.name}, ${c.webgpu!.software ? "software" : c.webgpu!.backend})`);
    }
    assert.ok(c.webgpu!.maxBufferSize >= 256 << 20 && c.webgpu!.maxStorageBufferBindingSize >= 128 << 20, JSON.stringify(c.webgpu));
    assert.deepEqual(c.skipped, [{ name: "tfjs-node-gpu", why: "not preferred" }]);
    assert.ok(out.lines!.includes(`trainer backend: webgpu on ${c.device}`), out.lines!.join("\n"));
    console.log(`# ${c.device}: ${JSON.stringify(out.ms)} ms`);
  });

  gpuTest("256² matMul equals a float64 reference within 1e-4 relative", (out) => {
    const { a, b } = matmulInputs();
    const N = MATMUL_N;
    const c = out.matmul!;
    assert.equal(c.length, N * N);
    let worst = 0;
    for (let i = 0; i < N; i++) {
      for (let j = 0; j < N; j++) {
        let ref = 0;
        let scale = 0; // Σ|a·b|: the size rounding errors are relative to
        for (let k = 0; k < N; k++) {
          const p = a[i * N + k] * b[k * N + j];
          ref += p;
          scale += Math.abs(p);
        }
        worst = Math.max(worst, Math.abs(c[i * N + j] - ref) / scale);
      }
    }
    assert.ok(worst <= 1e-4, `worst relative error ${worst}`);
  });

  gpuTest("tf.grad and tf.variableGrads through matMul → softmax → log equal the cpu backend's", (out) => {
    assert.deepEqual(mismatches(out.grads!, cpu().grads!, 1e-5), []);
  });

  gpuTest("the ops of a llama block (and its LoRA gradients) equal the cpu backend's within 1e-5", (out) => {
    const want = cpu().ops!;
    assert.ok(Object.keys(want).length >= 40);
    assert.deepEqual(mismatches(out.ops!, want, 1e-5), []);
  });

  gpuTest("20 training steps leave tf.memory() flat; it reports GPU bytes, and disposal frees them", (out) => {
    const { steps, holdRelease } = out.memory!;
    assert.equal(steps.length, 20);
    assert.ok(
      steps.every((s) => typeof s.numBytesInGPU === "number" && s.numBytesInGPU > 0),
      JSON.stringify(steps[0]),
    );
    for (const s of steps.slice(2)) assert.deepEqual(s, steps[1], `step memory grew: ${JSON.stringify(steps)}`);
    const [before, holding, after] = holdRelease!;
    assert.ok(holding - before >= 1 << 20, `holding 1 MiB: ${before} → ${holding}`);
    assert.equal(after, before, "GPU bytes after dispose");
  });

  gpuTest("freed GPU buffers stay pooled (numBytesAllocatedInGPU) until releaseFreeGpuBuffers()", (out) => {
    const { before, released, after } = out.memory!.pool!;
    assert.ok(before[1] - before[0] >= 12 * 8 * 64 * 4, `pool after 12 shapes: ${JSON.stringify(before)}`);
    assert.equal(released, before[1] - before[0]);
    assert.deepEqual(after, [before[0], before[0]]);
  });

  gpuTest("dataSync() of GPU data fails with an explanation (no OffscreenCanvas in Node)", (out) => {
    assert.match(out.syncRead?.error ?? "", /dataSync\(\)\/arraySync\(\) cannot read GPU data .* use await tensor\.data\(\)/);
  });

  gpuTest("after a GPU error (which WebGPU does not throw) every read fails, naming it", (out) => {
    assert.deepEqual(out.gpuError?.okBefore, [2, 3, 4]);
    assert.match(
      out.gpuError?.error ?? `read gave ${JSON.stringify(out.gpuError?.after)}`,
      /^webgpu: a GPU command failed earlier, so results since may be wrong: .*usage/i,
    );
  });

  gpuTest("a lost device makes reads fail with the reason, and the process goes on", (out) => {
    assert.match(out.deviceLost?.error ?? `read gave ${JSON.stringify(out.deviceLost?.after)}`, /^webgpu: the GPU device was lost \(destroyed/);
  });

  gpuTest("the default pick skips a software adapter, with the reason (and takes a GPU)", (gpu) => {
    const out = child("default", "choice", env);
    assert.equal(out.error, undefined, out.error);
    const sw = gpu.choice!.webgpu!.software;
    if (sw) {
      assert.notEqual(out.choice!.name, "webgpu");
      const why = `software adapter ${sw}: slower than wasm`;
      assert.deepEqual(
        out.choice!.skipped.find((s) => s.name === "webgpu"),
        { name: "webgpu", why },
      );
      assert.ok(out.lines!.includes(`trainer backend: skipped webgpu: ${why}`), out.lines!.join("\n"));
    } else {
      assert.equal(out.choice!.device, gpu.choice!.device);
    }
  });
}

test("clawrl train --backend webgpu trains like wasm: same losses and gradient norms, step by step", async (t) => {
  // The faster software route that has an adapter here (llvmpipe, else SwiftShader).
  const route = ["opengles", "swiftshader"].find((r) => child("webgpu", ALL, { CLAWRL_WEBGPU_ROUTE: r }).choice?.name === "webgpu");
  if (!route) return void t.skip("no software adapter here (see the tests above)");
  const model = await tinyModel({ arch: "qwen2", layers: 1, dim: 32 });
  const dir = tempDir();
  const data = path.join(dir, "data.jsonl");
  const rows = [
    { messages: [{ role: "user", content: "Hi" }], response: "Hello.", reward: 1, hint: "Be warm." },
    { messages: [{ role: "user", content: "Hi" }], response: "What?", reward: -1, hint: "Greet back." },
  ];
  fs.writeFileSync(data, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  const steps = (backend: string) => {
    const out = path.join(dir, backend);
    const r = runCli(
      [
        "train",
        "--model",
        model,
        "--data",
        data,
        "--out",
        out,
        "--method",
        "combined",
        "--steps",
        "2",
        "--rank",
        "2",
        "--alpha",
        "4",
        "--lr",
        "0.01",
        "--backend",
        backend,
      ],
      { CLAWRL_WEBGPU_ROUTE: route },
      300_000,
    );
    assert.equal(r.code, 0, r.stderr);
    const m = JSON.parse(fs.readFileSync(path.join(out, "metrics.json"), "utf8")) as { backend: string; steps: Array<{ loss: number; gradNorm: number }> };
    return m;
  };
  const gpu = steps("webgpu");
  const wasm = steps("wasm");
  assert.equal(gpu.backend, "webgpu");
  assert.equal(gpu.steps.length, 2);
  for (const [i, s] of gpu.steps.entries()) {
    for (const k of ["loss", "gradNorm"] as const) {
      const want = wasm.steps[i][k];
      assert.ok(Math.abs(s[k] - want) <= 1e-4 * Math.max(1, Math.abs(want)), `step ${i + 1} ${k}: webgpu ${s[k]} vs wasm ${want}`);
    }
  }
});

// Dawn stand-ins: the paths a real machine rarely shows (hangs, loss, refusals).

function fakeAdapter(info: Partial<GpuAdapterLike["info"]>, device: () => Promise<GpuDeviceLike>): GpuAdapterLike {
  return {
    info: { vendor: "", architecture: "", device: "", description: "", ...info },
    limits: { maxBufferSize: 1 << 30, maxStorageBufferBindingSize: 1 << 27 },
    features: new Set(),
    requestDevice: device,
  };
}

function fakeDevice(lost: Promise<{ reason: string; message: string }> = new Promise(() => {})): GpuDeviceLike {
  return { limits: { maxBufferSize: 1 << 30, maxStorageBufferBindingSize: 1 << 27 }, lost, onuncapturederror: null, destroy() {} };
}

function fakeGpu(adapter: GpuAdapterLike | null | Error): () => GpuLike {
  return () => ({ requestAdapter: async () => (adapter instanceof Error ? Promise.reject(adapter) : adapter) });
}

const fakeEnv = (): NodeJS.ProcessEnv => ({});
const nvidia = { vendor: "nvidia", architecture: "hopper", device: "nvidia-h100-80gb-hbm3", description: "NVIDIA: 580.159.04" };

test("software adapters are recognised by name or by the fallback flag; GPUs are not", () => {
  const cases: Array<[Partial<GpuAdapterLike["info"]>, string, string | null]> = [
    [
      { vendor: "google", architecture: "swiftshader", device: "swiftshader-device-subzero-", description: "SwiftShader driver 5.0.0" },
      "vulkan",
      "SwiftShader",
    ],
    [{ device: "llvmpipe-llvm-15-0-6-256-bits-", description: "llvmpipe: Mesa 25.0.7" }, "vulkan", "lavapipe"],
    [{ device: "llvmpipe-llvm-15-0-6-256-bits-", description: "OpenGL version OpenGL ES 3.2 Mesa 22.3.6" }, "opengles", "llvmpipe"],
    [{ vendor: "microsoft", description: "Microsoft Basic Render Driver" }, "d3d12", "Microsoft Basic Render Driver"],
    [{ vendor: "acme", description: "Acme Soft GPU", isFallbackAdapter: true }, "vulkan", "fallback adapter Acme Soft GPU"],
    [nvidia, "vulkan", null],
    [{ vendor: "apple", architecture: "metal-3", description: "Apple M2" }, "metal", null],
  ];
  for (const [info, backend, want] of cases) {
    assert.equal(softwareRenderer({ vendor: "", architecture: "", device: "", description: "", ...info }, backend), want, JSON.stringify(info));
  }
});

test("fake Dawn: a GPU is taken by default and named; its limits are reported", async () => {
  const d = await openDawn({ allowSoftware: false, createGpu: fakeGpu(fakeAdapter(nvidia, async () => fakeDevice())), env: fakeEnv(), platform: "linux" });
  assert.equal(d.summary.name, "nvidia h100 80gb hbm3");
  assert.equal(d.summary.software, null);
  assert.equal(d.summary.backend, "vulkan");
  assert.equal(d.summary.maxStorageBufferBindingSize, 1 << 27);
});

test("fake Dawn: a software adapter is refused unless webgpu was asked for", async () => {
  const sw = fakeAdapter({ architecture: "swiftshader", description: "SwiftShader driver 5.0.0" }, async () => fakeDevice());
  await assert.rejects(openDawn({ allowSoftware: false, createGpu: fakeGpu(sw), env: fakeEnv(), platform: "linux" }), {
    message: "software adapter SwiftShader: slower than wasm",
  });
  const d = await openDawn({ allowSoftware: true, createGpu: fakeGpu(sw), env: fakeEnv(), platform: "linux" });
  assert.equal(d.summary.software, "SwiftShader");
});

test("fake Dawn: no adapter anywhere is a skip reason naming each route tried", async () => {
  const env = fakeEnv();
  await assert.rejects(openDawn({ allowSoftware: false, createGpu: fakeGpu(null), env, platform: "linux" }), { message: "no adapter (default: none)" });
  await assert.rejects(openDawn({ allowSoftware: true, createGpu: fakeGpu(null), env, platform: "linux", findSwiftShader: () => null }), {
    message: "no adapter (default: none; swiftshader: no Chromium/Chrome SwiftShader ICD found; opengles: none)",
  });
  // Each software route gets its Dawn options and environment while Dawn looks, and the
  // environment is put back afterwards.
  const seen: Array<[string[], string | undefined, string | undefined]> = [];
  const spy = (options: string[]): GpuLike => {
    seen.push([options, env.VK_DRIVER_FILES, env.EGL_PLATFORM]);
    return { requestAdapter: async () => null };
  };
  await assert.rejects(openDawn({ allowSoftware: true, createGpu: spy, env, platform: "linux", findSwiftShader: () => "/x/vk_swiftshader_icd.json" }), {
    message: "no adapter (default: none; swiftshader: none; opengles: none)",
  });
  assert.deepEqual(seen, [
    [[], undefined, undefined],
    [[], "/x/vk_swiftshader_icd.json", undefined],
    [["backend=opengles"], undefined, "surfaceless"],
  ]);
  assert.deepEqual(env, {});
  await assert.rejects(openDawn({ allowSoftware: true, createGpu: fakeGpu(new Error("driver exploded\nstack...")), env: fakeEnv(), platform: "darwin" }), {
    message: "no adapter (default: driver exploded)",
  });
});

test("on Linux without any Vulkan driver listed, Dawn's default path is skipped without loading it", async () => {
  let created = 0;
  const spy = () => {
    created++;
    return { requestAdapter: async () => null };
  };
  await assert.rejects(openDawn({ allowSoftware: false, createGpu: spy, hasVulkanDriver: () => false, env: fakeEnv(), platform: "linux" }), {
    message: "no adapter (default: no Vulkan driver installed)",
  });
  assert.equal(created, 0);
  // The loader's env overrides count, and so does a manifest in a directory it searches.
  assert.equal(vulkanDriverListed({ VK_DRIVER_FILES: "/x/icd.json" }), true);
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, "vulkan", "icd.d"), { recursive: true });
  const env = { XDG_DATA_DIRS: dir, XDG_CONFIG_DIRS: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir };
  const listedElsewhere = vulkanDriverListed(env, dir); // /etc, /usr/share may list some here
  fs.writeFileSync(path.join(dir, "vulkan", "icd.d", "gpu_icd.json"), "{}");
  assert.equal(vulkanDriverListed(env, dir), true);
  fs.rmSync(path.join(dir, "vulkan", "icd.d", "gpu_icd.json"));
  assert.equal(vulkanDriverListed(env, dir), listedElsewhere);
});

test("fake Dawn: a hung requestAdapter or requestDevice is given up after the time limit", async () => {
  const hung = () => ({ requestAdapter: () => new Promise<null>(() => {}) });
  await assert.rejects(openDawn({ allowSoftware: false, createGpu: hung, env: fakeEnv(), platform: "linux", adapterTimeoutMs: 50 }), {
    message: "no adapter (default: requestAdapter did not answer within 50 ms)",
  });
  const t0 = Date.now();
  const never = fakeAdapter(nvidia, () => new Promise<GpuDeviceLike>(() => {}));
  await assert.rejects(openDawn({ allowSoftware: false, createGpu: fakeGpu(never), env: fakeEnv(), platform: "linux", deviceTimeoutMs: 100 }), {
    message: "device on nvidia h100 80gb hbm3: requestDevice did not answer within 100 ms",
  });
  assert.ok(Date.now() - t0 < 2000);
  const refused = fakeAdapter(nvidia, () => Promise.reject(new Error("OperationError: limits exceeded")));
  await assert.rejects(openDawn({ allowSoftware: false, createGpu: fakeGpu(refused), env: fakeEnv(), platform: "linux" }), {
    message: "device on nvidia h100 80gb hbm3: OperationError: limits exceeded",
  });
});

test("fake Dawn: device loss and uncaptured GPU errors are logged, not thrown", async () => {
  let lose: (l: { reason: string; message: string }) => void = () => {};
  const dev = fakeDevice(new Promise((r) => (lose = r)));
  const lines: string[] = [];
  const d = await openDawn({
    allowSoftware: false,
    createGpu: fakeGpu(fakeAdapter(nvidia, async () => dev)),
    env: fakeEnv(),
    platform: "linux",
    log: (l) => lines.push(l),
  });
  assert.equal(d.firstError(), null);
  dev.onuncapturederror!({ error: { message: "Out of memory\nwhile creating buffer" } });
  dev.onuncapturederror!({ error: { message: "Invalid buffer" } });
  lose({ reason: "unknown", message: "GPU reset" });
  await new Promise((r) => setImmediate(r));
  assert.equal(d.lostReason(), "unknown: GPU reset");
  assert.equal(d.firstError(), "Out of memory");
  assert.deepEqual(lines, ["webgpu: GPU error: Out of memory", "webgpu: GPU error: Invalid buffer", "webgpu: device lost (unknown: GPU reset)"]);
});

test("an unknown CLAWRL_WEBGPU_ROUTE is refused with the list", async () => {
  await assert.rejects(openDawn({ allowSoftware: true, createGpu: fakeGpu(null), env: { CLAWRL_WEBGPU_ROUTE: "cuda" }, platform: "linux" }), {
    message: 'unknown CLAWRL_WEBGPU_ROUTE "cuda" (one of default, swiftshader, opengles)',
  });
});
