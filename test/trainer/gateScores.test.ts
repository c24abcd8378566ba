// The publish gate's figures in one pass over distinct sequences (gateFigures) equal the separate
// measures it replaces in the trainer (meanKl, meanLogProb over each set), with the sets
// overlapping as the live loop's do, with the base model serving and with an adapter serving.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { createLora, type LoraParams } from "../../trainer/lora/params.js";
import { loadBaseModel, type BaseModel } from "../../trainer/model/index.js";
import { gateFigures, meanKl, meanLogProb, type GateSets, type ScoredSeq } from "../../trainer/train/gateScores.js";
import { tinyModel } from "../helpers/models.js";

let model: BaseModel;

/** A LoRA that moves the model (B random, not zero as a fresh adapter's). */
function movedLora(seed: number): LoraParams {
  const lora = createLora(model, { rank: 2, alpha: 4, seed });
  let s = seed * 100;
  for (const p of lora.pairs.values()) p.b.assign(tf.randomNormal(p.b.shape, 0, 0.5, "float32", s++));
  return lora;
}

function seq(seed: number, len: number, start: number): ScoredSeq {
  const tokens = Array.from({ length: len }, (_, i) => ((seed * 7919 + i * 104729) % (model.config.nVocab - 1)) + 1);
  return { tokens, start };
}

before(async () => {
  await initBackend();
  model = await loadBaseModel(await tinyModel({ arch: "qwen2", layers: 2, dim: 64 }));
});

describe("gateFigures", () => {
  const close = (a: number | null, b: number | null, what: string) => {
    assert.ok(a !== null && b !== null, `${what}: ${a} vs ${b}`);
    assert.ok(Math.abs(a - b) < 1e-5 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
  };
  const a = () => seq(1, 12, 5);
  const b = () => seq(2, 9, 3);
  const c = () => seq(3, 15, 8);
  const d = () => seq(4, 7, 2);
  const heldOnly = () => seq(5, 10, 4);
  const likedOnly = () => seq(6, 8, 3);
  // Overlapping as in the live loop: recent turns are liked or disliked, one is held back too;
  // and turns in one set only, whose batches skip what they do not need.
  const sets = (): GateSets => ({ prompts: [a(), b(), c()], liked: [a(), c(), likedOnly()], disliked: [b(), d()], heldBack: [c(), d(), heldOnly()] });

  for (const servingKind of ["the base model", "an adapter"] as const) {
    test(`equals the separate measures with ${servingKind} serving, in small batches too`, async () => {
      const cand = movedLora(1);
      const serving = servingKind === "an adapter" ? movedLora(2) : null;
      const s = sets();
      for (const budget of [4096, 20]) {
        const f = await gateFigures(model, cand, serving, s, { batchTokens: budget });
        const kl = await meanKl(model, cand, serving, s.prompts, budget);
        close(f.kl.kl, kl.kl, "KL to serving");
        assert.equal(f.kl.positions, kl.positions);
        assert.ok(f.kl.kl! > 1e-4, "the candidate differs from what serves");
        const recent = await meanKl(model, cand, null, s.prompts, budget);
        close(f.recent.kl, recent.kl, "KL to base, recent");
        const held = await meanKl(model, cand, null, s.heldBack, budget);
        close(f.heldBack.kl, held.kl, "KL to base, held back");
        assert.equal(f.heldBack.positions, held.positions);
        for (const r of ["liked", "disliked"] as const) {
          close(f[r].candidate, await meanLogProb(model, cand, s[r], budget), `${r}, candidate`);
          close(f[r].serving, await meanLogProb(model, serving, s[r], budget), `${r}, serving`);
          assert.equal(f[r].count, s[r].length);
        }
      }
    });
  }

  test("reports its progress from the block passes it planned (the last pass reaches the cap, and only the last)", async () => {
    for (const serving of [null, movedLora(2)]) {
      const seen: number[] = [];
      await gateFigures(model, movedLora(1), serving, sets(), { batchTokens: 20, onProgress: (f) => seen.push(f), progressEveryMs: 0 });
      // 2 layers, several batches, 2 or 3 policies per batch.
      assert.ok(seen.length >= 8, `${seen.length} reports`);
      assert.ok(seen.every((f, i) => i === 0 || f >= seen[i - 1]));
      assert.ok(Math.abs(seen.at(-1)! - 0.99) < 1e-9 && seen.at(-2)! < 0.99 - 1e-9, seen.join(", "));
    }
  });

  test("counts the output projections: at a real vocabulary they are a fifth of the gate, so the bar moves through them", async () => {
    // One batch, the base model serving: two body passes (candidate, base) of a tick per layer, then two head passes.
    const seen: number[] = [];
    await gateFigures(model, movedLora(1), null, sets(), { batchTokens: 1 << 20, onProgress: (f) => seen.push(f), progressEveryMs: 0 });
    const bodyTicks = 2 * model.config.nLayer;
    assert.equal(seen.length, bodyTicks + 2, seen.join(", "));
    assert.ok(seen[bodyTicks - 1] < seen[bodyTicks] && seen[bodyTicks] < seen[bodyTicks + 1], "the head passes move the bar");
    assert.ok(Math.abs(seen.at(-1)! - 0.99) < 1e-9);
  });

  test("empty sets give nulls, not NaN", async () => {
    const f = await gateFigures(model, movedLora(3), null, { prompts: [], liked: [a()], disliked: [], heldBack: [] });
    assert.deepEqual(
      [f.kl, f.recent, f.heldBack, f.disliked.candidate],
      [{ kl: null, positions: 0 }, { kl: null, positions: 0 }, { kl: null, positions: 0 }, null],
    );
    assert.ok(f.liked.candidate !== null && f.liked.candidate < 0);
  });
});
