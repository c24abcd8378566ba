import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { getLlama, type Llama } from "node-llama-cpp";
import { FluencyProbe, type FluencyProbeOptions, type ProbePrompt } from "../../electron/core/inference/fluencyProbe.js";
import { repoRoot, tempDir } from "../helpers/cli.js";
import { writeLoraAdapter } from "./loraFixture.js";

/**
 * The base model's own answers sampled ahead (issue 31, fluencyProbe.ts prepare), on
 * stories260K with the real llama.cpp: the answers prepared are the ones compare would have
 * sampled (the same figures, exactly, one sequence at a time), compare then samples only the
 * candidate's, takes over from ahead work in progress, ahead work gives way to chat at every
 * token, and closing the probe stops it.
 */
const MODEL = path.join(repoRoot, "models", "test", "stories260K.gguf");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fluency probe: the base model's answers sampled ahead", () => {
  let llama: Llama;
  const dir = tempDir("clawrl-probe-ahead-");
  const prompts: ProbePrompt[] = [];
  let adapter = "";
  const probes: FluencyProbe[] = [];
  const probe = (o: Partial<FluencyProbeOptions> = {}) => {
    const p = new FluencyProbe({ llama, modelPath: MODEL, threads: 1, maxContextSize: 256, parallel: 1, ...o });
    probes.push(p);
    return p;
  };
  /** Resolves once `fn` holds, polling. */
  const until = async (what: string, fn: () => boolean, ms = 60_000) => {
    const end = Date.now() + ms;
    while (!fn()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(5);
    }
  };
  before(async () => {
    llama = await getLlama({ gpu: false });
    const model = await llama.loadModel({ modelPath: MODEL });
    const texts = [
      "Once upon a time, there was a little girl named Lily.",
      "One day, a boy named Tim went to the park.",
      "The sun was shining and the birds sang.",
    ];
    // As the gate's prompts come (evalSets.ts probePrompts): each prompt's answers one after another, consecutive seeds.
    for (const [i, text] of texts.entries()) {
      for (let k = 0; k < 4; k++) prompts.push({ tokens: model.tokenize(text, true), temperature: 1, topP: 1, maxTokens: 24, seed: 1000 * i + k });
    }
    await model.dispose();
    adapter = path.join(dir, "small.gguf");
    writeLoraAdapter(adapter, MODEL, { magnitude: 0.3, seed: 7 });
  });
  after(async () => {
    for (const p of probes) await p.close();
    await llama?.dispose();
  });

  it("compare after prepare samples only the candidate's answers, with exactly the figures it gives without prepare", async () => {
    const plain = probe();
    const without = await plain.compare(adapter, prompts);
    assert.equal(plain.counts.candidate, 12);
    assert.equal(plain.counts.base, 12, "without prepare, compare samples the base model's answers too");
    assert.equal(without.baseSampled, 12, "and says so");

    const ahead = probe();
    ahead.prepare(prompts);
    await ahead.prepared();
    assert.equal(ahead.counts.ahead, 12, "every base answer sampled ahead, once");
    const withPrepare = await ahead.compare(adapter, prompts);
    assert.equal(ahead.counts.base, 0, "compare sampled no base answer");
    assert.equal(withPrepare.baseSampled, 0);
    assert.equal(ahead.counts.candidate, 12);
    // Same prompts, seeds and sequences: the same answers, so the same figures to the last bit.
    assert.deepEqual(withPrepare.candidate, without.candidate);
    assert.deepEqual(withPrepare.base, without.base);

    // Prepared again with the same prompts: nothing left to do.
    ahead.prepare(prompts);
    await ahead.prepared();
    assert.equal(ahead.counts.ahead, 12);
  });

  it("the same with the sequential rule: its rounds find the base answers ready", async () => {
    const plain = probe();
    const without = await plain.compare(adapter, prompts, { sequential: { margin: 0.4, minAnswers: 3, round: 3 } });
    const ahead = probe();
    ahead.prepare(prompts);
    await ahead.prepared();
    const withPrepare = await ahead.compare(adapter, prompts, { sequential: { margin: 0.4, minAnswers: 3, round: 3 } });
    assert.equal(ahead.counts.base, 0);
    assert.equal(ahead.counts.candidate, without.candidate.answers);
    assert.deepEqual(withPrepare, { ...without, seconds: withPrepare.seconds, baseSampled: 0 });
    assert.equal(without.baseSampled, without.base.answers);
  });

  it("a compare started while ahead work runs takes over at once, and its figures are those without prepare", async () => {
    const plain = probe();
    const without = await plain.compare(adapter, prompts);
    // Answers long enough that the whole ahead work takes far longer than the wait for one token.
    const ahead = probe();
    ahead.prepare(prompts);
    await until("ahead work to start", () => ahead.counts.steps > 0);
    const a0 = ahead.counts.ahead;
    const c = await ahead.compare(adapter, prompts);
    assert.ok(ahead.counts.ahead < 12, `compare did not wait for the whole ahead work (${ahead.counts.ahead} of 12 done ahead)`);
    // One sequence: the answer in flight is dropped at its next token (or ends, at its last).
    assert.ok(ahead.counts.ahead <= a0 + 1, `ahead work stopped at once (${a0} answers before compare, ${ahead.counts.ahead} after)`);
    assert.equal(ahead.counts.candidate, 12);
    assert.ok(ahead.counts.base + ahead.counts.ahead >= 12);
    assert.deepEqual(c.candidate, without.candidate);
    assert.deepEqual(c.base, without.base);
    // Compare took over what was left: nothing more is sampled ahead after it.
    await ahead.prepared();
    const after = ahead.counts.ahead;
    await sleep(100);
    assert.equal(ahead.counts.ahead, after);
  });

  it("while chat generates, ahead work takes at most one more step, then waits", async () => {
    let chat = false;
    const p = probe({ busy: () => chat, maxYieldMs: 60_000 });
    p.prepare(prompts);
    await until("ahead work to start", () => p.counts.steps > 2);
    chat = true;
    const s0 = p.counts.steps;
    await sleep(800);
    // One sequence: the step in flight when chat started may still count (a token is counted once evaluated), no other.
    assert.ok(p.counts.steps - s0 <= 1, `${p.counts.steps - s0} steps while chat generates`);
    chat = false;
    await p.prepared();
    assert.equal(p.counts.ahead, 12, "it went on once chat was done");
  });

  it("while held (the trainer working), ahead work waits at its next step and goes on when released, losing nothing", async () => {
    let held = false;
    const p = probe();
    p.holdAheadWhile(() => held);
    p.prepare(prompts);
    await until("ahead work to start", () => p.counts.steps > 2);
    held = true;
    const s0 = p.counts.steps;
    await sleep(800);
    // One sequence: the step in flight at the hold may still count (a token is counted once evaluated), no other.
    assert.ok(p.counts.steps - s0 <= 1, `${p.counts.steps - s0} steps while held`);
    assert.ok(p.counts.ahead < 12, `held before the end (${p.counts.ahead} of 12)`);
    held = false;
    await p.prepared();
    assert.equal(p.counts.ahead, 12, "released, it finished: each base answer sampled once");
  });

  it("held from the start, ahead work does not even load the model; the gate's compare does not wait for the hold", async () => {
    const p = probe();
    p.holdAheadWhile(() => true);
    p.prepare(prompts);
    await sleep(500);
    assert.deepEqual([p.loads, p.counts.steps, p.counts.ahead], [0, 0, 0]);
    const c = await p.compare(adapter, prompts);
    assert.deepEqual([p.counts.base, p.counts.candidate, p.counts.ahead], [12, 12, 0], "compare sampled the base answers itself");
    const plain = await probe().compare(adapter, prompts);
    assert.deepEqual([c.candidate, c.base], [plain.candidate, plain.base]);
  });

  it("closing the probe while ahead work runs stops it: nothing runs after, and prepare is then a no-op", async () => {
    const p = probe();
    p.prepare(prompts);
    await until("ahead work to start", () => p.counts.steps > 0);
    await p.close();
    const s = { ...p.counts };
    assert.ok(s.ahead < 12, "it did not finish the ahead work first");
    p.prepare(prompts);
    await sleep(300);
    assert.deepEqual(p.counts, s, "nothing ran after close");
    await assert.rejects(p.compare(adapter, prompts), /closed/);
  });
});
