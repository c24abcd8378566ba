import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { createLora, disposeLora } from "../../trainer/lora/params.js";
import { loadBaseModel, type BaseModel } from "../../trainer/model/index.js";
import { AdamW } from "../../trainer/optim/adamw.js";
import { runTraining } from "../../trainer/entries/offlineTrain.js";
import { parseSamplesJsonl } from "../../models/samples/sample.js";
import { SampleTokenizer, type PreparedSample } from "../../trainer/train/tokenize.js";
import { isEligible, loraParamRecord, trainSteps } from "../../trainer/train/trainSteps.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

let modelPath: string;
let model: BaseModel;
let samples: PreparedSample[];

const rows = [
  { messages: [{ role: "user", content: "Hi" }], response: "Hello.", reward: 1 },
  { messages: [{ role: "user", content: "Hi" }], response: "Go away.", reward: -1, hint: "Be kind." },
  {
    messages: [
      { role: "system", content: "Short answers." },
      { role: "user", content: "Name a fruit" },
    ],
    response: "Apple",
    hints: ["One word.", "A red one."],
  },
  { prompt_tokens: [5, 6, 7, 8], response_tokens: [9, 10, 11], logprobs: [-2.5, -3, -1.25], reward: 1 },
  { messages: [{ role: "user", content: "Nothing to learn here" }], response: "Ok", reward: 0 },
];

before(async () => {
  await initBackend(); // wasm here; CLAWRL_TF_BACKEND picks another (webgpu-training.test.ts)
  modelPath = await tinyModel({ arch: "llama", layers: 1, dim: 32 });
  const tok = await SampleTokenizer.open(modelPath);
  samples = parseSamplesJsonl(rows.map((r) => JSON.stringify(r)).join("\n")).map(({ sample, line }) => tok.prepare(sample, { maxContext: 64 }, line));
  await tok.dispose();
  model = await loadBaseModel(modelPath);
});

function fresh(lr = 1e-3) {
  const lora = createLora(model, { rank: 2, alpha: 4, seed: 3 });
  return { model, lora, optimizer: new AdamW(loraParamRecord(lora), { lr }) };
}

describe("trainSteps", () => {
  test("which samples each method trains on", () => {
    const pick = (m: "binary" | "opd" | "combined" | "topk") => samples.map((s) => isEligible(m, s));
    assert.deepEqual(pick("binary"), [true, true, false, true, false]);
    assert.deepEqual(pick("opd"), [false, true, true, false, false]);
    assert.deepEqual(pick("combined"), [true, true, true, true, false]);
    assert.deepEqual(pick("topk"), [true, true, true, true, false]);
  });

  test("the KL anchor's reference is the base model with the sample's hint when the method distils it", async () => {
    // Before the first update the adapter is zero (lora_B = 0): the policy is the bare base model.
    const hinted = [samples[1]]; // reward −1 with the hint "Be kind."
    const klAtStep1 = async (method: "binary" | "opd" | "combined") => {
      const state = fresh();
      try {
        const [m] = await trainSteps(state, hinted, { method, steps: 1, batchSize: 1, ppo: { klBeta: 0.05 } });
        return m.kl;
      } finally {
        state.optimizer.dispose();
        disposeLora(state.lora);
      }
    };
    // Binary RL ignores hints: its reference is the bare base model, the policy itself at first.
    assert.ok(Math.abs(await klAtStep1("binary")) < 1e-7);
    // OPD and combined are taught toward the hinted base model: the anchor measures the policy against it.
    const opd = await klAtStep1("opd");
    assert.ok(opd > 1e-4, `KL to the hinted base before any update: ${opd}`);
    assert.ok(Math.abs((await klAtStep1("combined")) - opd) < 1e-6);
  });

  test("reports how far a step is from its block passes: the work planned is the work run", async () => {
    for (const [method, klBeta] of [
      ["binary", 0],
      ["opd", 0.05],
      ["combined", 0.05],
      ["topk", 0],
    ] as const) {
      const state = fresh();
      const seen: Array<[number, number]> = [];
      try {
        // Micro-batches of one or two samples: several groups per step.
        await trainSteps(
          state,
          samples,
          { method, steps: 2, batchSize: 4, microBatchTokens: 24, ppo: { klBeta } },
          { onProgress: (done, of) => seen.push([done, of]), progressEveryMs: 0 },
        );
      } finally {
        state.optimizer.dispose();
        disposeLora(state.lora);
      }
      assert.ok(seen.every(([, of]) => of === 2));
      assert.ok(
        seen.every(([d], i) => i === 0 || d >= seen[i - 1][0]),
        `${method}: never goes back`,
      );
      for (const i of [0, 1]) {
        const inStep = seen.map(([d]) => d).filter((d) => d >= i && d < i + 1);
        assert.ok(inStep.length >= 4, `${method}: step ${i + 1} reported ${inStep.length} times`);
        // The last pass of the step brings it to the meter's cap (0.99 of a step), and only the last:
        // the plan counted every block pass the step ran (a wrong plan ends short of it, or reaches it early).
        if (method === "topk") continue; // the chosen hint's length is only known once chosen
        assert.ok(Math.abs(inStep.at(-1)! - (i + 0.99)) < 1e-9, `${method}: step ${i + 1} ended at ${inStep.at(-1)}`);
        assert.ok(inStep.at(-2)! < i + 0.99 - 1e-9, `${method}: reached the cap before its last pass (${inStep.join(", ")})`);
      }
    }
  });

  test("no tensor leaks: the tensor count after step 100 equals the count after step 2", async () => {
    const state = fresh();
    const counts: number[] = [];
    const done = await trainSteps(
      state,
      samples,
      { method: "combined", steps: 100, batchSize: 2, ppo: { klBeta: 0.05 } },
      { onStep: () => counts.push(tf.memory().numTensors) },
    );
    assert.equal(done.length, 100);
    assert.equal(counts[99], counts[1], `tensors: ${counts[1]} after step 2, ${counts[99]} after step 100`);
    assert.ok(done.every((m) => Number.isFinite(m.loss) && m.trainedTokens > 0));
    assert.ok(
      done.some((m) => m.kl > 0),
      "KL to the base should become positive once the adapter moves",
    );
    state.optimizer.dispose();
    disposeLora(state.lora);
  });

  test("top-k select also leaks nothing and trains", async () => {
    const state = fresh();
    const counts: number[] = [];
    const done = await trainSteps(state, samples, { method: "topk", steps: 12, batchSize: 4 }, { onStep: () => counts.push(tf.memory().numTensors) });
    assert.equal(counts[11], counts[1]);
    assert.ok(done.every((m) => Number.isFinite(m.loss)));
    state.optimizer.dispose();
    disposeLora(state.lora);
  });

  test("on-policy first step: the loss is exactly −mean(A)", async () => {
    // Step 1 is on-policy (lp_old from the same adapter): ρ = 1 everywhere, so
    // L = −mean_t A_t exactly: for "Hello." (+1) and "Go away." (−1), −(n₀ − n₁)/(n₀ + n₁).
    const state = fresh();
    const [m] = await trainSteps(state, samples.slice(0, 2), { method: "binary", steps: 1, batchSize: 2 });
    const [n0, n1] = samples.slice(0, 2).map((s) => s.tokens.length - s.promptLength);
    assert.notEqual(n0, n1);
    const expected = -(n0 - n1) / (n0 + n1);
    assert.ok(Math.abs(m.loss - expected) < 1e-5, `loss ${m.loss}, expected ${expected}`);
    assert.equal(m.trainedTokens, n0 + n1);
    assert.equal(m.clipFraction, 0);
    state.optimizer.dispose();
    disposeLora(state.lora);
  });

  for (const method of ["combined", "topk"] as const) {
    test(`${method}: a step split into micro-batches updates the adapter as the whole batch does`, async () => {
      const whole = fresh(1e-2);
      const split = fresh(1e-2);
      const batch = samples.slice(0, 4);
      const opts = { method, steps: 2, batchSize: 4, ppo: { klBeta: 0.05 } };
      const a = await trainSteps(whole, batch, opts);
      // A budget below any two samples' padded length: one sample per micro-batch.
      const b = await trainSteps(split, batch, { ...opts, microBatchTokens: 8 });
      for (let i = 0; i < 2; i++) {
        assert.ok(Math.abs(a[i].loss - b[i].loss) < 1e-5, `step ${i + 1} loss ${a[i].loss} vs ${b[i].loss}`);
        assert.ok(Math.abs(a[i].gradNorm - b[i].gradNorm) < 1e-4 * Math.max(1, a[i].gradNorm), `step ${i + 1} grad norm ${a[i].gradNorm} vs ${b[i].gradNorm}`);
        assert.equal(a[i].trainedTokens, b[i].trainedTokens);
      }
      assert.ok(a[1].kl > 0, "the KL term is live");
      // Async reads: the same test runs on webgpu (webgpu-training.test.ts).
      const maxAbs = async (f: () => tf.Tensor) => {
        const t = tf.tidy(() => tf.max(tf.abs(f())));
        const [v] = await t.data();
        t.dispose();
        return v;
      };
      let worst = 0;
      let moved = 0;
      for (const [key, p] of whole.lora.pairs) {
        const q = split.lora.pairs.get(key)!;
        worst = Math.max(worst, await maxAbs(() => tf.sub(p.b, q.b)));
        moved = Math.max(moved, await maxAbs(() => p.b));
      }
      assert.ok(moved > 1e-3, "the adapter moved");
      assert.ok(worst < 1e-5, `B differs by ${worst} (moved ${moved})`);
      for (const st of [whole, split]) {
        st.optimizer.dispose();
        disposeLora(st.lora);
      }
    });
  }

  test("a method with no eligible sample is refused clearly", async () => {
    const state = fresh();
    await assert.rejects(trainSteps(state, samples.slice(4), { method: "binary", steps: 1 }), /no sample carries a binary training signal \(reward ±1\)/);
    state.optimizer.dispose();
    disposeLora(state.lora);
  });
});

describe("checkpoints", () => {
  test("2 steps + resume + 1 step writes the same adapter and optimizer state, bit for bit, as 3 steps", async () => {
    const dir = tempDir();
    const data = path.join(dir, "data.jsonl");
    fs.writeFileSync(data, rows.map((r) => JSON.stringify(r)).join("\n"));
    const common = { modelPath, dataPath: data, method: "combined" as const, lr: 1e-2, rank: 2, alpha: 4, batchSize: 2, maxContext: 64 };
    await runTraining({ ...common, outDir: path.join(dir, "once"), steps: 3 });
    await runTraining({ ...common, outDir: path.join(dir, "half"), steps: 2 });
    const m = await runTraining({ ...common, outDir: path.join(dir, "resumed"), resumeDir: path.join(dir, "half"), steps: 1 });
    assert.equal(m.totalSteps, 3);
    assert.equal(m.steps.length, 3);
    const a = fs.readFileSync(path.join(dir, "once", "adapter.gguf"));
    const b = fs.readFileSync(path.join(dir, "resumed", "adapter.gguf"));
    const h = fs.readFileSync(path.join(dir, "half", "adapter.gguf"));
    assert.ok(a.equals(b), "resumed adapter differs from the uninterrupted one");
    assert.ok(!a.equals(h), "one more step should change the adapter");
    assert.ok(fs.readFileSync(path.join(dir, "once", "optimizer.bin")).equals(fs.readFileSync(path.join(dir, "resumed", "optimizer.bin"))));

    // Refusals: another model, another rank, a corrupt adapter, a missing file.
    const qwen = await tinyModel({ arch: "qwen2", layers: 1, dim: 32 });
    await assert.rejects(
      runTraining({ ...common, modelPath: qwen, outDir: path.join(dir, "x"), resumeDir: path.join(dir, "half"), steps: 1 }),
      /cannot resume from .*half: it was trained on another model \(llama 1 layers/,
    );
    await assert.rejects(
      runTraining({ ...common, rank: 8, outDir: path.join(dir, "x"), resumeDir: path.join(dir, "half"), steps: 1 }),
      /--rank 8 does not match the resumed adapter's rank 2/,
    );
    const broken = path.join(dir, "broken");
    fs.cpSync(path.join(dir, "half"), broken, { recursive: true });
    const ad = fs.readFileSync(path.join(broken, "adapter.gguf"));
    fs.writeFileSync(path.join(broken, "adapter.gguf"), ad.subarray(0, ad.length - 100));
    await assert.rejects(runTraining({ ...common, outDir: path.join(dir, "x"), resumeDir: broken, steps: 1 }), /adapter\.gguf/);
    fs.rmSync(path.join(broken, "optimizer.bin"));
    await assert.rejects(
      runTraining({ ...common, outDir: path.join(dir, "x"), resumeDir: broken, steps: 1 }),
      /cannot resume from .*broken: optimizer\.bin is missing/,
    );
    assert.equal(fs.existsSync(path.join(dir, "x")), false, "a refused resume writes nothing");
  });
});
