import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { backendOrder, machineFingerprint, runProbe, type BackendSkip, type ProbeOptions } from "../../electron/core/inference/backendProbe.js";
import { buildTinyModel } from "../../models/tiny/generate.js";
import { encodeGguf } from "../../models/gguf/writer.js";
import { clawrlBin, repoRoot, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

const fakeProbe = path.join(import.meta.dirname, "fixtures", "fakeProbe.ts");

describe("backend probe: a GPU backend that crashes, hangs or computes NaN is skipped, and the core serves on the next", () => {
  let model: string;
  let log: string;
  before(async () => {
    model = await tinyModel({ arch: "qwen2" });
    log = path.join(tempDir("clawrl-probe-log-"), "probes.log");
  });

  /** A core on "auto" whose GPU backends all exist as far as the prechecks know, probed by the fake child. */
  function start(dataDir: string, fake: string, probe: Partial<ProbeOptions> = {}): Promise<RunningCore> {
    fs.rmSync(log, { force: true });
    return startCore({
      model,
      dataDir,
      token: "probe-test-token",
      uiDir: "",
      training: false,
      engine: {
        backend: "auto",
        threads: 1,
        maxContextSize: 512,
        sequences: 1,
        probe: {
          script: fakeProbe,
          env: { FAKE_PROBE: fake, FAKE_PROBE_LOG: log },
          precheck: async () => null,
          loadTimeoutMs: 20_000,
          evalTimeoutMs: 20_000,
          ...probe,
        },
      },
    });
  }
  const probesRun = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter(Boolean) : []);

  async function status(core: RunningCore): Promise<{ backend: string; backendSkipped: BackendSkip[]; gpu: unknown }> {
    const r = await fetch(`${core.url}/api/status`, { headers: { authorization: `Bearer ${core.token}` } });
    assert.equal(r.status, 200);
    return (await r.json()) as { backend: string; backendSkipped: BackendSkip[]; gpu: unknown };
  }

  async function answers(core: RunningCore): Promise<void> {
    const r = await fetch(`${core.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: core.engine!.modelId, messages: [{ role: "user", content: "hi" }], max_tokens: 3 }),
    });
    assert.equal(r.status, 200, await r.clone().text());
    const body = (await r.json()) as { usage: { completion_tokens: number } };
    assert.ok(body.usage.completion_tokens >= 1);
  }

  const dataDir = tempDir("clawrl-probe-");

  it("CUDA aborts the process at its first evaluation, Vulkan computes NaN: the core serves on the CPU and /api/status says why", async () => {
    const core = await start(dataDir, "cuda=abort,vulkan=nan");
    try {
      assert.deepEqual(probesRun(), ["cuda", "vulkan"]);
      const s = await status(core);
      assert.equal(s.backend, "cpu");
      assert.equal(s.gpu, null);
      assert.equal(s.backendSkipped.length, 2);
      const [cuda, vulkan] = s.backendSkipped;
      assert.equal(cuda.backend, "cuda");
      assert.equal(cuda.kind, "broken");
      assert.match(cuda.reason, /^crashed \(SIGABRT\) while evaluating: .*CUDA error: the provided PTX was compiled with an unsupported toolchain/);
      assert.equal(vulkan.backend, "vulkan");
      assert.equal(vulkan.kind, "broken");
      assert.match(vulkan.reason, /100 of 100 logits not finite/);
      assert.equal(cuda.rememberedSince, undefined);
      await answers(core);
    } finally {
      await core.close();
    }
  });

  it("remembers them: the next start skips both without a probe, until the app or the driver changes", async () => {
    const again = await start(dataDir, "cuda=abort,vulkan=nan");
    try {
      assert.deepEqual(probesRun(), []);
      const s = await status(again);
      assert.equal(s.backend, "cpu");
      assert.deepEqual(
        s.backendSkipped.map((k) => [k.backend, k.kind, typeof k.rememberedSince]),
        [
          ["cuda", "broken", "string"],
          ["vulkan", "broken", "string"],
        ],
      );
      assert.match(s.backendSkipped[0].reason, /SIGABRT/);
    } finally {
      await again.close();
    }
    const changes: Array<Record<string, string>> = [{ app: "99.0.0" }, { nvidiaDriver: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  590.1" }];
    for (const change of changes) {
      // A new app or driver: the verdicts may no longer hold, so both are probed again (and CUDA works now).
      const updated = await start(dataDir, "cuda=unavailable,vulkan=nan", { fingerprint: { ...machineFingerprint(), ...change } });
      try {
        assert.deepEqual(probesRun(), ["cuda", "vulkan"], JSON.stringify(change));
        assert.equal((await status(updated)).backendSkipped[0].reason, "fake: no cuda here");
      } finally {
        await updated.close();
      }
    }
  });

  it("a backend that hangs (while evaluating, or while loading) is killed at its time limit", async () => {
    const t0 = performance.now();
    // The load limit counts from the fork: the fake probe's Node + tsx start must fit in it on a loaded machine.
    const core = await start(tempDir("clawrl-probe-"), "cuda=hang,vulkan=hang-load", { loadTimeoutMs: 8000, evalTimeoutMs: 1000 });
    try {
      const s = await status(core);
      assert.equal(s.backend, "cpu");
      assert.deepEqual(
        s.backendSkipped.map((k) => [k.backend, k.kind, k.reason]),
        [
          ["cuda", "broken", "hung: no answer within 1 s while evaluating"],
          ["vulkan", "broken", "hung: no answer within 8 s while loading the model"],
        ],
      );
      assert.ok(performance.now() - t0 < 60_000);
      await answers(core);
    } finally {
      await core.close();
    }
  });

  it("a named GPU backend falls back to the CPU (not to another GPU backend); the CPU is never probed", async () => {
    assert.deepEqual(backendOrder("cuda", "linux"), ["cuda", "cpu"]);
    assert.deepEqual(backendOrder("auto", "linux"), ["cuda", "vulkan", "cpu"]);
    assert.deepEqual(backendOrder("auto", "darwin"), ["metal", "cpu"]);
    for (const [backend, probed] of [
      ["vulkan", ["vulkan"]],
      ["cpu", []],
    ] as const) {
      fs.rmSync(log, { force: true });
      const core = await startCore({
        model,
        dataDir: tempDir("clawrl-probe-"),
        uiDir: "",
        training: false,
        engine: {
          backend,
          threads: 1,
          maxContextSize: 512,
          sequences: 1,
          probe: { script: fakeProbe, env: { FAKE_PROBE: "cuda=abort,vulkan=exit", FAKE_PROBE_LOG: log }, precheck: async () => null },
        },
      });
      try {
        assert.deepEqual(probesRun(), probed);
        const s = await status(core);
        assert.equal(s.backend, "cpu");
        if (backend === "cpu") assert.deepEqual(s.backendSkipped, []);
        else
          assert.deepEqual(
            s.backendSkipped.map((k) => [k.backend, k.kind, k.reason]),
            [["vulkan", "broken", "exited with code 1 while loading the model: ggml_backend_load: failed to initialize the device"]],
          );
      } finally {
        await core.close();
      }
    }
  });
});

describe("the real probe child (run on the CPU here: the core itself never probes the CPU)", () => {
  it("passes a sound model after a prompt and one token, and fails a model whose weights make NaN logits", async () => {
    const sound = await runProbe("cpu", { modelPath: await tinyModel({ arch: "qwen2" }), gpuLayers: "auto" });
    assert.equal(sound.kind, "ok", JSON.stringify(sound));
    assert.ok(sound.kind === "ok" && sound.gpuLayers === 0 && sound.ms >= 0);
    // One NaN in the output matrix's first row: token 0's logit is NaN at every position.
    const spec = buildTinyModel({ arch: "qwen2" });
    const out = spec.tensors.find((t) => t.name === "output.weight")!;
    Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength).writeFloatLE(NaN, 0);
    const file = path.join(tempDir("clawrl-probe-nan-"), "nan.gguf");
    fs.writeFileSync(file, encodeGguf(spec));
    const nan = await runProbe("cpu", { modelPath: file, gpuLayers: "auto" });
    assert.equal(nan.kind, "broken");
    assert.match(nan.kind === "broken" ? nan.reason : "", /^wrong results: 1 of \d+ logits not finite after evaluating \d+ tokens$/);
  });
});

describe("clawrl serve --gpu cuda on a machine without CUDA", () => {
  const hasCuda = fs.existsSync("/proc/driver/nvidia/version");
  it("serves on the CPU and says why CUDA was not used", { skip: hasCuda ? "this machine has an NVIDIA driver" : false }, async () => {
    const model = await tinyModel({ arch: "qwen2" });
    const child = spawn(
      process.execPath,
      [
        clawrlBin,
        "serve",
        "--model",
        model,
        "--port",
        "0",
        "--data-dir",
        tempDir("clawrl-serve-gpu-"),
        "--token",
        "serve-gpu-token",
        "--gpu",
        "cuda",
        "--context",
        "512",
        "--threads",
        "1",
      ],
      {
        cwd: repoRoot,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    try {
      const base = await new Promise<string>((resolve, reject) => {
        const onData = (d: Buffer) => {
          out += d.toString();
          const m = /API base:\s+(\S+)/.exec(out);
          if (m) resolve(m[1]);
        };
        child.stdout.on("data", onData);
        child.stderr.on("data", (d: Buffer) => (out += d.toString()));
        child.on("exit", (code) => reject(new Error(`serve exited with ${code}:\n${out}`)));
      });
      assert.match(out, /^Backend:\s+cpu, context 512, \d+ threads?$/m);
      assert.match(out, /^Skipped:\s+cuda: \S.*$/m);
      const s = (await (await fetch(`${base.replace(/\/v1$/, "")}/api/status`, { headers: { authorization: "Bearer serve-gpu-token" } })).json()) as {
        backend: string;
        backendSkipped: BackendSkip[];
      };
      assert.equal(s.backend, "cpu");
      assert.deepEqual(
        s.backendSkipped.map((k) => [k.backend, k.kind]),
        [["cuda", "unavailable"]],
      );
    } finally {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  });
});
