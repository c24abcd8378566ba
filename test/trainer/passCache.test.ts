// The warm trainer's pass cache (trainer/train/passCache.ts, issue 31) changes no result: a
// training run with it gives the same adapter as without, the gate's figures with rows taken
// from the cache equal the ones computed, an adapter whose fingerprint differs from the rows'
// gets its rows computed, and nothing but the cache's own tensors outlives a cycle.
import assert from "node:assert/strict";
import path from "node:path";
import { before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs-core";
import { initBackend } from "../../trainer/backend.js";
import { readLoraAdapter, writeLoraAdapter } from "../../trainer/lora/adapter-file.js";
import { createLora, disposeLora, type LoraParams } from "../../trainer/lora/params.js";
import { loadBaseModel, type BaseModel } from "../../trainer/model/index.js";
import { AdamW } from "../../trainer/optim/adamw.js";
import { gateFigures, type GateFigures, type GateSets, type ScoredSeq } from "../../trainer/train/gateScores.js";
import { BASE, loraFingerprint, PassCache, seqKey } from "../../trainer/train/passCache.js";
import type { PreparedSample } from "../../trainer/train/tokenize.js";
import { loraParamRecord, prepareAnchors, trainSteps, type TrainOptions } from "../../trainer/train/trainSteps.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

let model: BaseModel;

function ids(seed: number, len: number): number[] {
  return Array.from({ length: len }, (_, i) => ((seed * 7919 + i * 104729) % (model.config.nVocab - 1)) + 1);
}

/** A turn: prompt then response; with a hint, its teacher's prompt is longer (the hint appended). */
function sample(seed: number, promptLen: number, respLen: number, reward: number | undefined, hint = false): PreparedSample {
  const prompt = ids(seed, promptLen);
  const resp = ids(seed + 1000, respLen);
  return {
    tokens: [...prompt, ...resp],
    promptLength: promptLen,
    ...(reward !== undefined ? { reward } : {}),
    teachers: hint ? [{ hint: "h", tokens: [...prompt, ...ids(seed + 2000, 3), ...resp], promptLength: promptLen + 3 }] : [],
    truncated: false,
  };
}

const asSeq = (s: PreparedSample): ScoredSeq => ({ tokens: s.tokens, start: s.promptLength });

function fresh(lr = 1e-2) {
  const lora = createLora(model, { rank: 2, alpha: 4, seed: 3 });
  return { model, lora, optimizer: new AdamW(loraParamRecord(lora), { lr }) };
}

function drop(st: ReturnType<typeof fresh>) {
  st.optimizer.dispose();
  disposeLora(st.lora);
}

async function maxDiff(a: LoraParams, b: LoraParams): Promise<{ worst: number; moved: number }> {
  let worst = 0;
  let moved = 0;
  for (const [key, p] of a.pairs) {
    const q = b.pairs.get(key)!;
    const d = tf.tidy(() => tf.stack([tf.max(tf.abs(tf.sub(p.b, q.b))), tf.max(tf.abs(tf.sub(p.a, q.a))), tf.max(tf.abs(p.b))]));
    const [x, y, m] = await d.data();
    d.dispose();
    worst = Math.max(worst, x, y);
    moved = Math.max(moved, m);
  }
  return { worst, moved };
}

function sameFigures(a: GateFigures, b: GateFigures, what: string) {
  const close = (x: number | null, y: number | null, name: string) => {
    assert.ok((x === null) === (y === null), `${what} ${name}: ${x} vs ${y}`);
    if (x !== null && y !== null) assert.ok(Math.abs(x - y) <= 1e-6 * Math.max(1, Math.abs(y)), `${what} ${name}: ${x} vs ${y}`);
  };
  close(a.kl.kl, b.kl.kl, "KL to serving");
  close(a.recent.kl, b.recent.kl, "KL to base, recent");
  close(a.heldBack.kl, b.heldBack.kl, "KL to base, held back");
  assert.deepEqual([a.kl.positions, a.recent.positions, a.heldBack.positions], [b.kl.positions, b.recent.positions, b.heldBack.positions]);
  for (const r of ["liked", "disliked"] as const) {
    close(a[r].candidate, b[r].candidate, `${r} candidate`);
    close(a[r].serving, b[r].serving, `${r} serving`);
  }
}

before(async () => {
  await initBackend();
  model = await loadBaseModel(await tinyModel({ arch: "qwen2", layers: 2, dim: 64 }));
});

describe("pass cache", () => {
  // The batch: thumbs (binary), a hinted one and a hinted thumbs down (combined).
  const batch = () => [sample(1, 9, 5, 1), sample(2, 6, 7, -1), sample(3, 11, 4, 1, true), sample(4, 7, 6, -1, true), sample(5, 5, 3, 1)];
  // Held-back turns (never trained on), a liked answer from an earlier cycle.
  const heldBack = () => [sample(20, 8, 5, 1), sample(21, 10, 4, -1)];
  const older = () => sample(30, 7, 6, 1);
  const setsOf = (b: PreparedSample[]): GateSets => ({
    prompts: [...b, older()].map(asSeq),
    liked: [b[0], b[2], older()].map(asSeq),
    disliked: [b[1], b[3]].map(asSeq),
    heldBack: heldBack().map(asSeq),
  });

  for (const teacher of ["base", "current"] as const) {
    test(`a run with the cache gives the adapter a run without it gives (β 0.1, combined, teacher ${teacher}), its later steps skipping the anchor's and the teacher's passes`, async () => {
      const opts: TrainOptions = { method: "combined", steps: teacher === "base" ? 3 : 1, batchSize: 5, teacher, ppo: { klBeta: 0.1 } };
      const plain = fresh();
      const cached = fresh();
      const cache = new PassCache();
      const a = await trainSteps(plain, batch(), opts);
      const b = await trainSteps(cached, batch(), { ...opts, cache });
      for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i].loss - b[i].loss) < 1e-6, `step ${i + 1}: loss ${a[i].loss} vs ${b[i].loss}`);
      const { worst, moved } = await maxDiff(plain.lora, cached.lora);
      assert.ok(moved > 1e-3, "the adapter moved");
      assert.ok(worst < 1e-6, `the adapters differ by ${worst}`);
      // Step 1: with the base teacher, the hinted samples' anchor is the teacher's pass; else everything is scored.
      if (teacher === "base") assert.ok(b[0].savedTokenBlocks! > 0);
      else assert.equal(b[0].savedTokenBlocks, 0);
      if (teacher === "base") {
        assert.ok(b[1].savedTokenBlocks! > 0 && b[1].savedTokenBlocks === b[2].savedTokenBlocks, "later steps run no anchor or teacher pass");
        assert.equal(
          cache.saved.anchor + cache.saved.teacher,
          b.reduce((s, m) => s + m.savedTokenBlocks!, 0),
        );
      }
      drop(plain);
      drop(cached);
      cache.dispose();
    });
  }

  test("samples scored ahead (prepareAnchors): the run's first step skips their anchor pass and gives the same adapter", async () => {
    // Binary: the anchor is the only pass the cache saves, in every step alike.
    const opts: TrainOptions = { method: "binary", steps: 2, batchSize: 5, ppo: { klBeta: 0.1 } };
    const plain = fresh();
    const ahead = fresh();
    const cache = new PassCache();
    const a = await trainSteps(plain, batch(), opts);
    const r = await prepareAnchors(model, cache, batch(), "binary", 24);
    assert.deepEqual(r, { scored: 5, cached: 0 });
    assert.deepEqual(await prepareAnchors(model, cache, batch(), "binary"), { scored: 0, cached: 5 }, "scored once");
    const b = await trainSteps(ahead, batch(), { ...opts, cache });
    assert.ok(b[0].savedTokenBlocks! > 0, "step 1 ran no anchor pass");
    assert.equal(b[0].savedTokenBlocks, b[1].savedTokenBlocks, "step 1 saved what the later steps save");
    const { worst, moved } = await maxDiff(plain.lora, ahead.lora);
    assert.ok(moved > 1e-3, "the adapter moved");
    assert.ok(worst < 1e-6, `the adapters differ by ${worst}`);
    for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i].loss - b[i].loss) < 1e-6, `step ${i + 1}: loss ${a[i].loss} vs ${b[i].loss}`);
    drop(plain);
    drop(ahead);
    cache.dispose();
  });

  test("the progress plans only the passes that run: each step ends at the meter's cap with its last pass", async () => {
    for (const teacher of ["base", "current"] as const) {
      const cache = new PassCache();
      const st = fresh();
      const seen: number[] = [];
      await trainSteps(
        st,
        batch(),
        { method: "combined", steps: 3, batchSize: 5, teacher, microBatchTokens: 24, ppo: { klBeta: 0.1 }, cache },
        { onProgress: (done) => seen.push(done), progressEveryMs: 0 },
      );
      for (const i of [0, 1, 2]) {
        const inStep = seen.filter((d) => d >= i && d < i + 1);
        assert.ok(Math.abs(inStep.at(-1)! - (i + 0.99)) < 1e-9, `teacher ${teacher}, step ${i + 1} ended at ${inStep.at(-1)}`);
        assert.ok(inStep.at(-2)! < i + 0.99 - 1e-9, `teacher ${teacher}, step ${i + 1} reached the cap early (${inStep.join(", ")})`);
      }
      drop(st);
      cache.dispose();
    }
  });

  test("teacher 'current': a run scores each teacher once, in its first step; the next run scores them again", async () => {
    const cache = new PassCache();
    const st = fresh();
    const b = batch();
    const [, m2] = await trainSteps(st, b, { method: "opd", steps: 2, batchSize: 5, teacher: "current", cache });
    // Two hinted samples, each scored once in the run: step 2 saved their teacher pass.
    assert.ok(m2.savedTokenBlocks! > 0);
    assert.equal(cache.saved.teacher, m2.savedTokenBlocks);
    const [m3] = await trainSteps(st, b, { method: "opd", steps: 1, batchSize: 5, teacher: "current", cache });
    assert.equal(m3.savedTokenBlocks, 0, "a new run, a new policy: its teachers are scored again");
    drop(st);
    cache.dispose();
  });

  test("the gate's figures with rows from the cache equal the computed ones, over two cycles; a fingerprint that differs computes", async () => {
    const before = tf.memory().numTensors;
    const cache = new PassCache();
    const st = fresh();
    const b = batch();
    const dir = tempDir("clawrl-passcache-");
    // Cycle 1: the base model serves. The anchor pass leaves the trained turns' base rows.
    await trainSteps(st, b, { method: "combined", steps: 2, batchSize: 5, ppo: { klBeta: 0.1 }, cache });
    const sets = setsOf(b);
    const candFp = await loraFingerprint(st.lora);
    const f1 = await gateFigures(model, st.lora, null, sets, { cache, candidateFingerprint: candFp });
    const u1 = await gateFigures(model, st.lora, null, sets);
    sameFigures(f1, u1, "cycle 1");
    // The three non-hinted trained turns' base rows came from the anchor pass (the hinted ones' anchor is their teacher's prompt).
    assert.equal(f1.reuse!.reusedRows, 3);
    assert.ok(f1.reuse!.savedTokenBlocks > 0);
    for (const s of heldBack()) assert.ok(cache.hasRows(BASE, seqKey(s.tokens, s.promptLength)), "the held-back turns' base rows stay for the next cycle");
    // Published: the candidate serves, read from its file; the trainer continues from it.
    const file = path.join(dir, "adapter.gguf");
    await writeLoraAdapter(file, model, st.lora);
    const serving = readLoraAdapter(file, model);
    const servFp = await loraFingerprint(serving);
    assert.equal(servFp, candFp, "the file holds the adapter exactly");
    cache.keepAdapters([null, candFp]);
    // Cycle 2: new turns trained, the earlier ones still in the recent set.
    const b2 = [sample(40, 8, 5, 1), sample(41, 6, 6, -1), sample(42, 9, 4, 1, true), b[0], b[1]];
    await trainSteps(st, b2, { method: "combined", steps: 2, batchSize: 5, ppo: { klBeta: 0.1 }, cache });
    assert.equal(cache.runStart, servFp);
    const sets2: GateSets = {
      prompts: [...b2, older()].map(asSeq),
      liked: [b2[0], older()].map(asSeq),
      disliked: [b2[1]].map(asSeq),
      heldBack: heldBack().map(asSeq),
    };
    const cand2 = await loraFingerprint(st.lora);
    const seen: number[] = [];
    const f2 = await gateFigures(model, st.lora, serving, sets2, {
      cache,
      servingFingerprint: servFp,
      candidateFingerprint: cand2,
      onProgress: (x) => seen.push(x),
      progressEveryMs: 0,
    });
    // The progress planned only the passes that ran: the last one reaches the cap, and only the last.
    assert.ok(Math.abs(seen.at(-1)! - 0.99) < 1e-9 && seen.at(-2)! < 0.99 - 1e-9, seen.join(", "));
    const u2 = await gateFigures(model, st.lora, serving, sets2);
    sameFigures(f2, u2, "cycle 2");
    // Every sequence's serving rows were cached: the trained ones from step 1, the others from the last gate's candidate pass.
    const unique = new Set([...sets2.prompts, ...sets2.heldBack].map((s) => seqKey(s.tokens, s.start))).size;
    assert.equal(f2.reuse!.reusedRows, unique);
    // A serving adapter that is not the one the rows were computed under: computed, same figures.
    const other = createLora(model, { rank: 2, alpha: 4, seed: 9 });
    for (const p of other.pairs.values()) tf.tidy(() => p.b.assign(tf.randomNormal(p.b.shape, 0, 0.3, "float32", 5)));
    const otherFp = await loraFingerprint(other);
    assert.notEqual(otherFp, servFp);
    const f3 = await gateFigures(model, st.lora, other, sets2, { cache, servingFingerprint: otherFp });
    const u3 = await gateFigures(model, st.lora, other, sets2);
    sameFigures(f3, u3, "another adapter serving");
    assert.ok(f3.kl.kl! > 1e-4, "that adapter differs");
    for (const s of sets2.prompts) assert.ok(cache.hasRows(BASE, seqKey(s.tokens, s.start)));
    disposeLora(other);
    disposeLora(serving);
    // Nothing leaks: the adapter and its optimizer, and the cache's rows; then the cache's go too.
    drop(st);
    assert.equal(tf.memory().numTensors - cache.tensorCount, before);
    cache.dropAdapterState();
    assert.ok(cache.tensorCount > 0, "the base model's rows stay when the adapter changes");
    cache.dispose();
    assert.equal(tf.memory().numTensors, before);
  });

  test("the row cache keeps to its byte bound and still gives the computed figures", async () => {
    const before = tf.memory().numTensors;
    const D = model.config.nEmbd;
    const cache = new PassCache(12 * D * 4);
    const st = fresh();
    const b = batch();
    await trainSteps(st, b, { method: "binary", steps: 2, batchSize: 5, ppo: { klBeta: 0.1 }, cache });
    assert.ok(cache.rowBytes <= 12 * D * 4);
    const sets = setsOf(b);
    const f = await gateFigures(model, st.lora, null, sets, { cache, candidateFingerprint: await loraFingerprint(st.lora) });
    sameFigures(f, await gateFigures(model, st.lora, null, sets), "small cache");
    assert.ok(cache.rowBytes <= 12 * D * 4);
    drop(st);
    cache.dispose();
    assert.equal(tf.memory().numTensors, before);
  });
});
