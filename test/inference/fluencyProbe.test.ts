import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { getLlama, type Llama, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { FluencyProbe, type ProbePrompt } from "../../electron/core/inference/fluencyProbe.js";
import { tokenLogprob } from "../../electron/core/inference/sampling.js";
import { repoRoot, tempDir } from "../helpers/cli.js";
import { writeLoraAdapter } from "./loraFixture.js";

/**
 * The gate's fluency probe on stories260K (a real story model): a candidate adapter's own
 * answers, scored by the base model, against the base model's own answers; bounded memory (the
 * model instance is reloaded every few candidates, since node-llama-cpp keeps every adapter it
 * loaded until then).
 */
const MODEL = path.join(repoRoot, "models", "test", "stories260K.gguf");

/** The mean temperature-1 log-prob of `response` after `prompt` from each position's full logits (the reference the probe's native pass must match). */
async function fullLogitsReference(seq: LlamaContextSequence, prompt: number[], response: number[]): Promise<number> {
  await seq.clearHistory();
  await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1) as Token[]);
  const out = await seq.controlledEvaluate(
    [prompt[prompt.length - 1], ...response.slice(0, -1)].map(
      (t) => [t as Token, { generateNext: { logits: true } }] as [Token, { generateNext: { logits: true } }],
    ),
  );
  return response.reduce((s, t, i) => s + tokenLogprob(out[i]!.next.logits!, t), 0) / response.length;
}

describe("fluency probe (llama.cpp, own model instance)", () => {
  let llama: Llama;
  let probe: FluencyProbe;
  const dir = tempDir("clawrl-probe-");
  const prompts: ProbePrompt[] = [];
  before(async () => {
    llama = await getLlama({ gpu: false });
    const model = await llama.loadModel({ modelPath: MODEL });
    for (const [i, text] of ["Once upon a time, there was a little girl named Lily.", "One day, a boy named Tim went to the park."].entries()) {
      prompts.push({ tokens: model.tokenize(text, true), temperature: 1, topP: 1, maxTokens: 32, seed: 11 + i });
    }
    await model.dispose();
    probe = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, reloadEvery: 2 });
  });
  after(async () => {
    await probe?.close();
    await llama?.dispose();
  });

  it("an adapter that changes nothing answers as the base model does: the same figures", async () => {
    const file = path.join(dir, "zero.gguf");
    writeLoraAdapter(file, MODEL, { magnitude: 0 });
    const c = await probe.compare(file, prompts);
    assert.equal(c.candidate.answers, 2);
    assert.ok(c.candidate.tokens > 10, `${c.candidate.tokens} answer tokens`);
    assert.equal(c.candidate.tokens, c.base.tokens);
    assert.ok(Math.abs(c.candidate.meanLogprob! - c.base.meanLogprob!) < 1e-4, `${c.candidate.meanLogprob} vs ${c.base.meanLogprob}`);
    assert.ok(c.base.meanLogprob! < 0 && c.base.meanLogprob! > -4, `the base model reads its own stories well: ${c.base.meanLogprob}`);
  });

  it("an adapter that wrecks the model: its answers read far worse to the base model", async () => {
    const file = path.join(dir, "wreck.gguf");
    writeLoraAdapter(file, MODEL, { magnitude: 2, seed: 3 });
    const c = await probe.compare(file, prompts);
    assert.ok(c.candidate.meanLogprob! < c.base.meanLogprob! - 1, `${c.candidate.meanLogprob} vs ${c.base.meanLogprob}`);
  });

  it("reloads its model instance every `reloadEvery` candidates (adapters do not pile up), and scores given answers", async () => {
    const loadsBefore = probe.loads;
    const file = path.join(dir, "third.gguf");
    writeLoraAdapter(file, MODEL, { magnitude: 0.01, seed: 5 });
    await probe.compare(file, prompts);
    assert.equal(probe.loads, loadsBefore + 1, "the third candidate needed a fresh instance (2 adapters were loaded on the first)");
    const [own, none] = await probe.score([
      { prompt: prompts[0].tokens, response: prompts[1].tokens.slice(1) },
      { prompt: prompts[0].tokens, response: [] },
    ]);
    assert.ok(own !== null && own < 0);
    assert.equal(none, null);
  });

  it("scores an answer as the whole temperature-1 distribution does (each position's full logits)", async () => {
    const model = await llama.loadModel({ modelPath: MODEL });
    const ctx = await model.createContext({ contextSize: 256, threads: 1 });
    try {
      const prompt = prompts[0].tokens;
      const response = prompts[1].tokens.slice(1);
      const reference = await fullLogitsReference(ctx.getSequence(), prompt, response);
      const [scored] = await probe.score([{ prompt, response }]);
      assert.ok(scored !== null && Math.abs(scored - reference) < 1e-4, `${scored} vs ${reference}`);
    } finally {
      await ctx.dispose();
      await model.dispose();
    }
  });

  it("keeps the prompt a sequence holds: answers to the same prompts scored again cost only their own tokens, each on the sequence holding its prompt", async () => {
    // One token a sequence an evaluation (a budget no batch meets), so a call's rounds are the most tokens one sequence evaluated.
    const p = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, parallel: 2, batchMs: 0 });
    try {
      const a = { prompt: prompts[0].tokens, response: prompts[1].tokens.slice(1, 9) };
      const b = { prompt: prompts[1].tokens, response: prompts[0].tokens.slice(1, 13) };
      const first = await p.score([a, b]);
      assert.equal(p.sequences, 2);
      assert.equal(p.chunkTokens, 1);
      const s0 = p.counts.steps;
      // The other order: each answer still goes to the sequence that holds its prompt.
      const again = await p.score([b, a]);
      assert.equal(p.counts.steps - s0, b.response.length, "only the answers' tokens evaluated, not the prompts again");
      // (The first call's chunk started above one token, so its prompts took fewer rounds than tokens, but still some.)
      assert.ok(s0 > b.response.length + 4, `${s0} rounds for the first call: it evaluated the prompts too`);
      assert.ok(Math.abs(again[0]! - first[1]!) < 1e-4 && Math.abs(again[1]! - first[0]!) < 1e-4, `${again.join()} vs ${first.join()}`);
    } finally {
      await p.close();
    }
  });

  it("sizes its contexts to what it is asked (grown for a longer prompt, never shrunk), and reads a long prompt whole", async () => {
    const sized = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 1024 });
    const model = await llama.loadModel({ modelPath: MODEL });
    const ctx = await model.createContext({ contextSize: 1024, threads: 1 });
    try {
      const file = path.join(dir, "zero-sized.gguf");
      writeLoraAdapter(file, MODEL, { magnitude: 0 });
      await sized.compare(file, prompts);
      assert.equal(sized.contextTokens, 256, "short prompts and 32-token answers: the smallest step, not the 1,024 cap");

      // 450 prompt tokens: over 256, so the context must grow, or the prompt's start would be cut.
      const story =
        "Once upon a time, a dog named Max found a red ball in the garden. He ran to his friend Sue and showed it to her. " +
        "They played all day under the big tree. When the sun went down, Mom called them home for dinner. Max was sad, " +
        "but Sue said they could play again tomorrow. The next morning it was raining, so they stayed inside and built a fort. ";
      const prompt = model.tokenize(story.repeat(6), true).slice(0, 450);
      assert.equal(prompt.length, 450);
      const response = prompts[1].tokens.slice(1);
      const seq = ctx.getSequence();
      const whole = await fullLogitsReference(seq, prompt, response);
      const cut = await fullLogitsReference(seq, prompt.slice(prompt.length - (256 - response.length - 1)), response);
      assert.ok(Math.abs(whole - cut) > 1e-3, `the prompt's start matters to the score (${whole} vs ${cut}), so a cut prompt would show`);
      const [scored] = await sized.score([{ prompt, response }]);
      assert.equal(sized.contextTokens, 512);
      // Batches of other shapes round differently (~2e-4 nat here): the score is the whole prompt's, far from the cut one's.
      assert.ok(scored !== null && Math.abs(scored - whole) < Math.abs(scored - cut) / 3, `${scored} vs ${whole} (cut: ${cut})`);

      await sized.compare(file, prompts);
      assert.equal(sized.contextTokens, 512, "kept at its larger size for the next call");
    } finally {
      await ctx.dispose();
      await model.dispose();
      await sized.close();
    }
  });

  it("samples several answers at once (one context, several sequences) with the figures of one at a time, and reports its progress", async () => {
    const file = path.join(dir, "wreck-parallel.gguf");
    writeLoraAdapter(file, MODEL, { magnitude: 2, seed: 3 });
    // Greedy answers: a batch's decode rounds differently from one sequence's (llama.cpp), so sampled
    // answers part ways after a few tokens; the argmax does not.
    const many = [0, 100, 200].flatMap((d) => prompts.map((p, i) => ({ ...p, temperature: 0, tokens: [...p.tokens, 300 + i + d] })));
    const one = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, parallel: 1 });
    const four = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, parallel: 4 });
    try {
      const a = await one.compare(file, many);
      const seen: number[] = [];
      const b = await four.compare(file, many, { onProgress: (f) => seen.push(f) });
      assert.equal(one.sequences, 1);
      assert.equal(four.sequences, 4, "a small model's KV cache fits 4 sequences in the budget");
      assert.equal(b.candidate.answers, 6);
      assert.equal(b.candidate.tokens, a.candidate.tokens);
      assert.equal(b.base.tokens, a.base.tokens);
      assert.ok(Math.abs(b.candidate.meanLogprob! - a.candidate.meanLogprob!) < 1e-3, `${b.candidate.meanLogprob} vs ${a.candidate.meanLogprob}`);
      assert.ok(Math.abs(b.base.meanLogprob! - a.base.meanLogprob!) < 1e-3, `${b.base.meanLogprob} vs ${a.base.meanLogprob}`);
      // 6 candidate answers and 6 of the base model's, each sampled then scored.
      assert.equal(seen.length, 24);
      assert.ok(
        seen.every((f, i) => i === 0 || f >= seen[i - 1]),
        "never goes back",
      );
      assert.equal(seen.at(-1), 1);
      // The base model's answers are remembered: a second candidate samples only its own.
      const again: number[] = [];
      await four.compare(file, many, { onProgress: (f) => again.push(f) });
      assert.equal(again.length, 12);
    } finally {
      await one.close();
      await four.close();
    }
  });

  it("keeps each evaluation within its time budget (one token a sequence when every batch is over it) with the same figures", async () => {
    const file = path.join(dir, "wreck-chunks.gguf");
    writeLoraAdapter(file, MODEL, { magnitude: 2, seed: 3 });
    const greedy = prompts.map((p) => ({ ...p, temperature: 0 }));
    // A budget no evaluation meets, and one every evaluation of this tiny model meets by far.
    const tight = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, parallel: 2, batchMs: 0 });
    const loose = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, parallel: 2, batchMs: 60_000 });
    try {
      const a = await tight.compare(file, greedy);
      const b = await loose.compare(file, greedy);
      assert.equal(tight.chunkTokens, 1, "over budget: halved down to one token a sequence");
      assert.equal(loose.chunkTokens, 16, "well within budget: doubled up to the largest chunk");
      assert.ok(
        tight.counts.steps > loose.counts.steps + 50,
        `${tight.counts.steps} vs ${loose.counts.steps} evaluations: the tight probe gave way more often`,
      );
      // llama.cpp rounds a batch of 1 and one of 16 differently (another kernel), and the wrecking
      // adapter magnifies it: a few hundredths of a nat. A chunk scored against the wrong tokens
      // would be off by whole nats (the gate's budget is 0.4 a token).
      assert.equal(a.candidate.tokens, b.candidate.tokens);
      assert.ok(Math.abs(a.candidate.meanLogprob! - b.candidate.meanLogprob!) < 0.1, `${a.candidate.meanLogprob} vs ${b.candidate.meanLogprob}`);
      assert.ok(Math.abs(a.base.meanLogprob! - b.base.meanLogprob!) < 0.1, `${a.base.meanLogprob} vs ${b.base.meanLogprob}`);
    } finally {
      await tight.close();
      await loose.close();
    }
  });

  it("waits while chat is busy, but never longer than maxYieldMs at a time", async () => {
    const busyProbe = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, busy: () => true, maxYieldMs: 20 });
    try {
      const t0 = Date.now();
      const file = path.join(dir, "zero.gguf");
      const c = await busyProbe.compare(file, prompts.slice(0, 1));
      assert.equal(c.candidate.answers, 1);
      assert.ok(Date.now() - t0 >= 20, "it yielded at least once");
    } finally {
      await busyProbe.close();
    }
  });
});

describe("fluency probe, sequential (issue 31): stops once the verdict is clear", () => {
  let llama: Llama;
  let probe: FluencyProbe;
  const dir = tempDir("clawrl-probe-seq-");
  const prompts: ProbePrompt[] = [];
  before(async () => {
    llama = await getLlama({ gpu: false });
    const model = await llama.loadModel({ modelPath: MODEL });
    for (const [i, text] of ["Once upon a time, there was a little girl named Lily.", "One day, a boy named Tim went to the park."].entries()) {
      for (let k = 0; k < 8; k++) prompts.push({ tokens: model.tokenize(text, true), temperature: 1, topP: 1, maxTokens: 24, seed: 100 * i + k });
    }
    await model.dispose();
    probe = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256 });
  });
  after(async () => {
    await probe?.close();
    await llama?.dispose();
  });

  it("a clear pass and a clear fail stop after 8 of 16 answers, with the full probe's verdict", async () => {
    for (const [name, magnitude, within] of [
      ["zero", 0, true],
      ["wreck", 2, false],
    ] as const) {
      const file = path.join(dir, `${name}.gguf`);
      writeLoraAdapter(file, MODEL, { magnitude, seed: 3 });
      const full = await probe.compare(file, prompts);
      const seq = await probe.compare(file, prompts, { sequential: { margin: 0.4 } });
      assert.equal(full.candidate.answers, 16);
      assert.equal(seq.stoppedEarly, true, name);
      assert.equal(seq.candidate.answers, 8);
      assert.equal(seq.planned, 16);
      const pass = (c: typeof full) => c.candidate.meanLogprob! >= c.base.meanLogprob! - 0.4;
      assert.equal(pass(full), within, `${name}: full ${full.candidate.meanLogprob} vs ${full.base.meanLogprob}`);
      assert.equal(pass(seq), within, `${name}: sequential ${seq.candidate.meanLogprob} vs ${seq.base.meanLogprob}`);
    }
  });
});
