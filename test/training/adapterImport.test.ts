/**
 * Adapters in and out of a running app (issue 21), real processes on the tiny qwen2 model with
 * the default publish gate: a llama.cpp LoRA imported through POST /api/checkpoints/import is
 * gated and served; `clawrl adapters export` writes it as PEFT / GGUF / Ollama; the PEFT export
 * imported back with `clawrl adapters import --url` is the same adapter; an adapter that moves
 * the model too far is rejected by the gate and kept, the served one stays; a mismatched or
 * damaged one is refused with the reason and nothing is written; training goes on from an
 * imported checkpoint. Also `clawrl adapters import` without a running core.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { readGguf, readTensorBytes } from "../../models/gguf/reader.js";
import { readSafetensors, writeSafetensors, tensorF32 } from "../../models/adapters/safetensors.js";
import { runCliAsync, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { writeLoraAdapter as writeRandomAdapter } from "../inference/loraFixture.js";
import { api, chat, checkpoints, feedback, startLearningCore, waitFor, FLUENCY_NOT_TESTED } from "./helpers.js";

describe("adapter import and export through the running app", () => {
  let core: RunningCore;
  let model: string;
  const work = tempDir("clawrl-adapters-");
  const turns: string[] = [];
  before(async () => {
    core = await startLearningCore({ gate: FLUENCY_NOT_TESTED });
    model = await tinyModel({ arch: "qwen2" });
    // Recent prompts for the gate's KL, no feedback yet (nothing trains).
    for (const q of ["what is a cat", "tell me a story", "name a colour"]) turns.push((await chat(core, q)).turnId);
  });
  after(async () => {
    await core?.close();
  });

  const stagingLeft = () => fs.readdirSync(core.paths.checkpoints).filter((n) => n.startsWith(".staging-"));

  it("imports a llama.cpp LoRA GGUF: gated against the base, published and served", async () => {
    const file = path.join(work, "small.gguf");
    writeRandomAdapter(file, model, { rank: 4, alpha: 8, magnitude: 0.05, seed: 3 });
    const r = await api(core, "POST", "/api/checkpoints/import", { path: file });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.checkpoint.n, 1);
    assert.equal(r.json.checkpoint.verdict, "published", JSON.stringify(r.json.checkpoint.gate));
    assert.equal(r.json.checkpoint.imported, true);
    assert.equal(r.json.checkpoint.active, true);
    assert.ok(r.json.checkpoint.kl !== null && r.json.checkpoint.kl < 0.05, "measured against the base on the recent prompts");
    assert.deepEqual([r.json.imported.format, r.json.imported.rank, r.json.imported.alpha, r.json.imported.pairs], ["gguf", 4, 8, 14]);
    assert.ok(r.json.swap.pauseMs >= 0);
    assert.equal((await chat(core, "and now?")).adapter, "ckpt-1");
    const m = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, "1", "metrics.json"), "utf8"));
    assert.equal(m.imported.format, "gguf");
    assert.equal(m.imported.source, file);
    assert.equal(m.totalSteps, 0);
    assert.equal(m.gate.verdict, "published");
    assert.deepEqual(stagingLeft(), []);
  });

  it("exports checkpoint 1 as PEFT, llama.cpp GGUF and Ollama", async () => {
    const dd = ["--data-dir", core.paths.root];
    const peft = path.join(work, "peft");
    let r = await runCliAsync(["adapters", "export", "1", "--format", "peft", "--out", peft, ...dd]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /exported ckpt-1 \(rank 4, alpha 8, 14 adapted layers\) as peft/);
    assert.match(r.stdout, /base_model_name_or_path: null/);
    assert.deepEqual(fs.readdirSync(peft).sort(), ["README.md", "adapter_config.json", "adapter_model.safetensors"]);
    const cfg = JSON.parse(fs.readFileSync(path.join(peft, "adapter_config.json"), "utf8"));
    assert.deepEqual([cfg.peft_type, cfg.r, cfg.lora_alpha], ["LORA", 4, 8]);
    assert.match(fs.readFileSync(path.join(peft, "README.md"), "utf8"), /PeftModel\.from_pretrained/);

    const gg = path.join(work, "gguf");
    r = await runCliAsync(["adapters", "export", "1", "--format", "gguf", "--out", gg, ...dd]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(fs.readFileSync(path.join(gg, "adapter.gguf")), fs.readFileSync(path.join(core.paths.checkpoints, "1", "adapter.gguf")));
    const readme = fs.readFileSync(path.join(gg, "README.md"), "utf8");
    assert.ok(readme.includes(`llama-server -m ${model} --lora adapter.gguf`), readme);
    assert.ok(readme.includes(`llama-cli    -m ${model} --lora adapter.gguf`), readme);

    const ol = path.join(work, "ollama");
    r = await runCliAsync(["adapters", "export", "1", "--format", "ollama", "--out", ol, ...dd]);
    assert.equal(r.code, 0, r.stderr);
    const modelfile = fs.readFileSync(path.join(ol, "Modelfile"), "utf8");
    assert.match(modelfile, new RegExp(`^FROM ${model.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
    assert.match(modelfile, /^ADAPTER \.\/adapter\.gguf$/m);
    assert.ok(fs.existsSync(path.join(ol, "adapter.gguf")));

    r = await runCliAsync(["adapters", "export", "9", "--format", "peft", "--out", path.join(work, "x"), ...dd]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no checkpoint 9/);
    r = await runCliAsync(["adapters", "export", "1", "--out", path.join(work, "x"), ...dd]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--format is required/);
    r = await runCliAsync(["adapters", "export", "1", "--format", "peft", "--base", await tinyModel({ arch: "llama" }), "--out", path.join(work, "x"), ...dd]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is not the model checkpoint 1 was trained on/);
  });

  it("imports the PEFT export back with `clawrl adapters import --url`: the same adapter, published as checkpoint 2", async () => {
    const r = await runCliAsync(["adapters", "import", path.join(work, "peft"), "--url", core.url, "--token", core.token, "--data-dir", core.paths.root]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /imported the PEFT adapter \(rank 4, alpha 8, 14 adapted layers\) as ckpt-2: the publish gate passed it/);
    const list = await checkpoints(core);
    const c2 = list.find((c) => c.n === 2)!;
    assert.equal(c2.verdict, "published");
    assert.equal(c2.active, true);
    assert.ok(c2.kl !== null && c2.kl < 1e-6, `KL to ckpt-1 is ${c2.kl}`);
    const [a, b] = [readGguf(path.join(core.paths.checkpoints, "1", "adapter.gguf")), readGguf(path.join(core.paths.checkpoints, "2", "adapter.gguf"))];
    assert.equal(b.tensors.length, a.tensors.length);
    for (const t of a.tensors) assert.deepEqual(readTensorBytes(b, t.name), readTensorBytes(a, t.name), t.name);
    assert.equal((await chat(core, "after the round trip")).adapter, "ckpt-2");
  });

  it("an adapter that moves the model too far is rejected by the gate, kept for inspection; the served adapter stays", async () => {
    const file = path.join(work, "big.gguf");
    writeRandomAdapter(file, model, { rank: 4, alpha: 8, magnitude: 3, seed: 5 });
    const r = await api(core, "POST", "/api/checkpoints/import", { path: file });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.checkpoint.n, 3);
    assert.equal(r.json.checkpoint.verdict, "rejected");
    assert.match(r.json.checkpoint.gate.reasons.join("; "), /KL to the serving adapter .* is above the bound/);
    assert.equal(r.json.swap, null);
    const st = (await api(core, "GET", "/api/status")).json;
    assert.equal(st.training.activeCheckpoint, 2);
    assert.equal((await chat(core, "still there?")).adapter, "ckpt-2");
    const act = await api(core, "POST", "/api/checkpoints/3/activate");
    assert.equal(act.status, 409, "a rejected import cannot be served by hand either");
  });

  it("a mismatched or damaged adapter is refused with the reason: nothing is written, the served adapter stays", async () => {
    const before = fs.readdirSync(core.paths.checkpoints).sort();
    const count = (await checkpoints(core)).length;
    const llama = path.join(work, "llama.gguf");
    writeRandomAdapter(llama, await tinyModel({ arch: "llama" }), { rank: 4 });
    const wide = path.join(work, "wide.gguf");
    writeRandomAdapter(wide, await tinyModel({ arch: "qwen2", dim: 96 }), { rank: 4 });
    const damaged = path.join(work, "damaged");
    fs.cpSync(path.join(work, "peft"), damaged, { recursive: true });
    const w = path.join(damaged, "adapter_model.safetensors");
    fs.truncateSync(w, fs.statSync(w).size - 100);
    const nanDir = path.join(work, "nan");
    fs.cpSync(path.join(work, "peft"), nanDir, { recursive: true });
    const st = readSafetensors(path.join(nanDir, "adapter_model.safetensors"));
    const tensors = st.tensors.map((t) => ({ name: t.name, shape: t.shape, values: tensorF32(st, t) }));
    tensors[0].values[0] = NaN;
    writeSafetensors(path.join(nanDir, "adapter_model.safetensors"), tensors);
    const cases: Array<[string, RegExp]> = [
      [llama, /the adapter is for architecture 'llama', the served model is 'qwen2'/],
      [wide, /lora_A is \[4, 96\].*the served model's layer maps 64 → 64.*made for another model/],
      [damaged, /adapter_model.safetensors is damaged: truncated/],
      [nanDir, /holds NaN at index 0: the adapter is damaged/],
      [model, /not a LoRA adapter/],
      [path.join(work, "absent"), /no such file or directory/],
    ];
    for (const [p, re] of cases) {
      const r = await api(core, "POST", "/api/checkpoints/import", { path: p });
      assert.equal(r.status, 422, `${p}: ${JSON.stringify(r.json)}`);
      assert.match(r.json.error.message, re);
      assert.equal(r.json.error.code, "adapter_unusable");
    }
    const rel = await api(core, "POST", "/api/checkpoints/import", { path: "relative/dir" });
    assert.equal(rel.status, 400);
    assert.match(rel.json.error.message, /absolute path/);
    const cli = await runCliAsync(["adapters", "import", llama, "--url", core.url, "--token", core.token]);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /the adapter is for architecture 'llama'/);
    assert.deepEqual(fs.readdirSync(core.paths.checkpoints).sort(), before, "nothing written");
    assert.equal((await checkpoints(core)).length, count);
    assert.equal((await api(core, "GET", "/api/status")).json.training.activeCheckpoint, 2);
    assert.equal((await chat(core, "and still?")).adapter, "ckpt-2");
  });

  it("training goes on from the imported checkpoint", async () => {
    await feedback(core, turns[0], "up");
    await feedback(core, turns[1], "down");
    const c4 = await waitFor("checkpoint 4", async () => (await checkpoints(core)).find((c) => c.n === 4));
    const m = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, "4", "metrics.json"), "utf8"));
    assert.equal(m.parent, 2, "trained on from the imported checkpoint that was served");
    assert.equal(m.samplesUsed, 2);
    assert.ok(["published", "rejected"].includes(c4.verdict));
    const list = await runCliAsync(["adapters", "list", "--data-dir", core.paths.root]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /ckpt-1 +published .*\(imported\)/);
    assert.match(list.stdout, /ckpt-3 +rejected .*\(imported\)/);
  });
});

describe("clawrl adapters import without a running core", () => {
  it("starts the core on --model for the import, gates and commits it", async () => {
    const model = await tinyModel({ arch: "qwen2" });
    const dataDir = tempDir("clawrl-adapters-cli-");
    const file = path.join(dataDir, "..", `${path.basename(dataDir)}-a.gguf`);
    writeRandomAdapter(file, model, { rank: 2, alpha: 4, magnitude: 0.05 });
    const r = await runCliAsync(["adapters", "import", file, "--model", model, "--data-dir", dataDir], { CLAWRL_THREADS: "1" }, 240_000);
    fs.rmSync(file, { force: true });
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /starting one on .* for the import/);
    assert.match(r.stdout, /imported the llama\.cpp adapter \(rank 2, alpha 4, 14 adapted layers\) as ckpt-1: the publish gate passed it/);
    const state = JSON.parse(fs.readFileSync(path.join(dataDir, "state.json"), "utf8"));
    assert.equal(state.training.activeCheckpoint, 1);
    assert.ok(fs.existsSync(path.join(dataDir, "checkpoints", "1", "adapter.gguf")));
  });
});
