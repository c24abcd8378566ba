import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { cpuBatchSeconds, loadCatalog, MAX_CPU_BATCH_SECONDS, recommendModel, trainerRamBeside } from "../../models/catalog.js";
import { APP_TRAIN_CONTEXT } from "../../models/trainVerdict.js";
import { resolveModelSource } from "../../models/hfSource.js";
import { repoRoot } from "../helpers/cli.js";
import { catalogPlanner, catalogFootprint, serveOnly, trainabilityOf, trainabilityPhrase } from "../../models/trainability.js";

const GiB = 2 ** 30;
/** The trainer's plan on wasm at the app's context, as the core and the CLI pass it. */
const planTraining = catalogPlanner();

describe("model catalog", () => {
  it("lists only trainable architectures, each with a real shape for the trainer's memory plan", () => {
    const c = loadCatalog();
    assert.ok(c.length >= 6);
    for (const m of c) {
      assert.ok(["llama", "qwen2", "qwen3"].includes(m.architecture), m.id);
      assert.ok(m.serveMemoryBytes > m.sizeBytes, m.id);
      assert.ok(catalogFootprint(m), `${m.id} has no shape in models/tiny/shapes.ts: no training verdict`);
      assert.equal("trainMemoryBytes" in m, false, "the plan decides training memory, not a number in the catalog");
    }
  });

  it("recommends a bigger model for a bigger machine, and the smallest for a small one", () => {
    const small = recommendModel({ ramBytes: 4 * GiB, vramBytes: 0, planTraining }).entry;
    const mid = recommendModel({ ramBytes: 16 * GiB, vramBytes: 0, planTraining }).entry;
    const big = recommendModel({ ramBytes: 64 * GiB, vramBytes: 24 * GiB, planTraining }).entry;
    assert.ok(small.parameters < mid.parameters, `${small.id} < ${mid.id}`);
    assert.ok(mid.parameters <= big.parameters, `${mid.id} <= ${big.id}`);
    assert.equal(
      recommendModel({ ramBytes: 1 * GiB, vramBytes: 0, planTraining }).entry.id,
      [...loadCatalog()].sort((a, b) => a.parameters - b.parameters)[0].id,
    );
  });

  it("recommends the largest model that serves, trains at the app's context, and on a CPU in minutes per batch", () => {
    const catalog = loadCatalog();
    const good = (m: (typeof catalog)[number], facts: Parameters<typeof recommendModel>[0], cores: number) => {
      const t = planTraining(m, trainerRamBeside(m, facts));
      return Boolean(t?.fits && t.maxContext >= APP_TRAIN_CONTEXT && cpuBatchSeconds(m, cores) <= MAX_CPU_BATCH_SECONDS);
    };
    const picks = new Map<string, string>();
    for (const ram of [4, 8, 16, 64]) {
      for (const cores of [2, 8]) {
        const facts = { ramBytes: ram * GiB, vramBytes: 0, cpuCores: cores, planTraining };
        const r = recommendModel(facts);
        picks.set(`${ram}/${cores}`, r.entry.id);
        assert.equal(r.training?.fits, true, `${ram} GiB, ${cores} cores: ${r.entry.id} ${r.training?.summary}`);
        // When some model trains at the full context in minutes, the pick is one of them.
        const anyGood = catalog.some((m) => m.serveMemoryBytes <= ram * GiB * 0.6 && good(m, facts, cores));
        assert.equal(good(r.entry, facts, cores), anyGood, `${ram} GiB, ${cores} cores: ${r.entry.id} ${r.training?.summary}`);
        assert.match(r.reason, /trains here on wasm \(context \d+ tokens, about \d+ min per batch of feedback\)/);
        for (const m of catalog.filter((m) => anyGood && m.parameters > r.entry.parameters && m.serveMemoryBytes <= ram * GiB * 0.6)) {
          assert.equal(good(m, facts, cores), false, `${ram} GiB, ${cores} cores: ${m.id} is larger and trains as well, yet ${r.entry.id} was picked`);
        }
      }
    }
    // More cores never get a smaller model (they train a batch faster); 2 cores keep to small ones.
    const size = (id: string) => catalog.find((m) => m.id === id)!.parameters;
    for (const ram of [4, 8, 16, 64])
      assert.ok(
        size(picks.get(`${ram}/8`)!) >= size(picks.get(`${ram}/2`)!),
        `${ram} GiB: 8 cores ${picks.get(`${ram}/8`)} vs 2 cores ${picks.get(`${ram}/2`)}`,
      );
    assert.ok(size(picks.get("64/2")!) < 1e9, `2 cores: ${picks.get("64/2")} trains a batch in minutes`);
  });

  it("follows the trainer's backend and CLAWRL_TRAINER_RAM_LIMIT", () => {
    const smallest = [...loadCatalog()].sort((a, b) => a.parameters - b.parameters)[0];
    // A trainer kept to 100 MiB trains nothing: the smallest model, which chats without learning.
    const starved = recommendModel({ ramBytes: 32 * GiB, vramBytes: 0, trainerRamLimitBytes: 100 * 2 ** 20, planTraining });
    assert.equal(starved.entry.id, smallest.id);
    assert.equal(starved.training?.fits, false);
    assert.match(starved.reason, /No model can train here on wasm \(the smallest needs [\d.]+ GiB RAM, 0\.1 available\)/);
    // A GPU trainer (tfjs-node-gpu, 24 GiB) trains the largest at a longer context than wasm's heap allows.
    const gpu = { name: "tensorflow", deviceBytes: 24 * GiB, sharesHostMemory: false };
    const onGpu = recommendModel({ ramBytes: 64 * GiB, vramBytes: 24 * GiB, trainerOnGpu: true, planTraining: catalogPlanner({ backend: gpu }) });
    const onWasm = recommendModel({ ramBytes: 64 * GiB, vramBytes: 24 * GiB, cpuCores: 8, planTraining });
    assert.equal(onGpu.entry.id, [...loadCatalog()].sort((a, b) => b.parameters - a.parameters)[0].id);
    assert.equal(onGpu.training?.backend, "tensorflow");
    assert.ok(onGpu.entry.parameters > onWasm.entry.parameters, `GPU ${onGpu.entry.id} vs wasm ${onWasm.entry.id}`);
  });

  it("says in a few words whether a model trains here and how", () => {
    const shape = (id: string) => catalogFootprint(loadCatalog().find((m) => m.id === id)!)!;
    const yes = trainabilityOf(shape("smollm2-135m-instruct"), { hostBytes: 16 * GiB, maxContext: 1024 });
    assert.equal(trainabilityPhrase(yes), `trains: yes (wasm, ${yes.weights}, ctx 1024)`);
    assert.match(yes.weights!, /^(resident|streamed)$/);
    const no = trainabilityOf(shape("qwen3-4b"), { hostBytes: 2 * GiB });
    assert.equal(no.limit, "memory");
    assert.match(trainabilityPhrase(no), /^trains: no \(needs \d+\.\d GiB (wasm memory|RAM), \d+\.\d available\)$/);
    assert.equal(trainabilityPhrase(serveOnly("phi3"), "phi3"), "serve-only (architecture phi3)");
    assert.equal(trainabilityPhrase(null), "trains: ?");
  });

  it("the core, the catalog, the CLI and the memory plan never load tfjs (only the trainer process does)", () => {
    // tfjs-core makes its engine (globalThis._tfengine) when it loads.
    const script = `
      for (const m of ["./electron/core/core.ts", "./models/catalog.ts", "./electron/core/cli/commands/models.ts", "./electron/core/cli/commands/serve.ts"]) await import(m);
      const before = typeof globalThis._tfengine;
      const t = await import("./models/trainability.ts");
      const { loadCatalog } = await import("./models/catalog.ts");
      const verdict = t.trainabilityOf(t.catalogFootprint(loadCatalog()[0]), { hostBytes: 8 * 2 ** 30 });
      console.log(before, typeof globalThis._tfengine, verdict.fits);`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: repoRoot, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), "undefined undefined true");
  });

  it("resolves catalog ids and hf: references on HF_ENDPOINT", () => {
    const env = { HF_ENDPOINT: "http://mirror.local:9/" };
    const s = resolveModelSource("qwen2.5-0.5b-instruct", env);
    assert.equal(s.url, "http://mirror.local:9/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf");
    const h = resolveModelSource("hf:me/repo@v2/sub/dir/m.gguf", env);
    assert.equal(h.url, "http://mirror.local:9/me/repo/resolve/v2/sub/dir/m.gguf");
    assert.throws(() => resolveModelSource("hf:me/repo/../x.gguf", env), /bad file path/);
    assert.throws(() => resolveModelSource("hf:nope", env), /not a Hugging Face file reference/);
    assert.throws(() => resolveModelSource("mystery", env), /unknown model 'mystery'/);
  });
});
