import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { getLlama, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { IncrementalDetokenizer } from "../../electron/core/inference/detokenizer.js";
import { storiesModelPath } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

// Multi-byte characters (split across byte tokens), leading spaces, newlines and long runs, so
// that settling happens at many different points.
const TEXT = ' Once upon a time, a robot named Ünïcødé painted 🎨🖌️ 画家 in the rain.\n\nIt said: "naïve café — ok?"  Then   it   slept. '.repeat(4);

describe("incremental detokenizer", () => {
  let llama: Llama;
  const models: Array<[string, LlamaModel]> = [];
  before(async () => {
    llama = await getLlama({ gpu: false });
    models.push(["byte-level BPE (tiny qwen2)", await llama.loadModel({ modelPath: await tinyModel({ arch: "qwen2" }) })]);
    const stories = storiesModelPath();
    if (stories) models.push(["SentencePiece (stories260K)", await llama.loadModel({ modelPath: stories })]);
  });
  after(async () => {
    for (const [, m] of models) await m.dispose();
    await llama?.dispose();
  });

  it("equals detokenizing all tokens at once, after every token", () => {
    assert.ok(models.length >= 1);
    for (const [name, model] of models) {
      const tokens = model.tokenize(TEXT, false);
      assert.ok(tokens.length > 100, `${name}: ${tokens.length} tokens`);
      const inc = new IncrementalDetokenizer(model);
      for (let i = 0; i < tokens.length; i++) {
        const got = inc.push(tokens[i]);
        const want = model.detokenize(tokens.slice(0, i + 1), false);
        assert.equal(got, want, `${name}: after token ${i + 1} of ${tokens.length}`);
      }
      assert.equal(inc.length, tokens.length);
      assert.equal(inc.text, model.detokenize(tokens, false));
    }
  });

  it("continuing a prompt: equals detokenizing with the prompt's tokens as context (a SentencePiece word start keeps its space)", () => {
    for (const [name, model] of models) {
      const prompt = model.tokenize("Once upon a time, there was a dog.", false);
      const tokens = model.tokenize(TEXT, false);
      const inc = new IncrementalDetokenizer(model, prompt);
      for (let i = 0; i < tokens.length; i++) {
        assert.equal(inc.push(tokens[i]), model.detokenize(tokens.slice(0, i + 1), false, prompt.slice(-3)), `${name}: after token ${i + 1}`);
      }
    }
    const spm = models.find(([name]) => name.startsWith("SentencePiece"))?.[1];
    if (spm) {
      const answer = spm.tokenize("He ran.", false); // SentencePiece starts it with "▁He"
      assert.equal(new IncrementalDetokenizer(spm, spm.tokenize("A dog.", false)).push(answer[0]), " He");
      assert.equal(new IncrementalDetokenizer(spm).push(answer[0]), "He", "alone (a chat answer) the space is dropped");
    }
  });

  it("equals it on random tokens too (invalid UTF-8 byte runs, as random models emit), and keeps its re-detokenized tail short", () => {
    // Ids below 460: byte tokens (ids 0-255 in the tiny vocabulary, 3-258 in stories260K's) and short merges.
    for (const [name, model] of models) {
      let s = 7;
      const rand = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
      const tokens = Array.from({ length: 400 }, () => Math.floor(rand() * 460)) as Token[];
      const inc = new IncrementalDetokenizer(model);
      for (let i = 0; i < tokens.length; i++) {
        assert.equal(inc.push(tokens[i]), model.detokenize(tokens.slice(0, i + 1), false), `${name}: after random token ${i + 1}`);
        // Settling keeps up: the unsettled tail never holds more than a few tokens' text.
        assert.ok(inc.text.length - inc.settledLength <= 64, `${name}: unsettled tail of ${inc.text.length - inc.settledLength} chars after token ${i + 1}`);
      }
    }
  });
});
