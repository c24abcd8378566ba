import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { getLlama, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { IncrementalDetokenizer } from "../../electron/core/inference/detokenizer.js";
import { storiesModelPath } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

// Multi-byte characters (split across byte tokens), leading spaces, newlines and long runs, so
// that settling happens at many different points.
const TEXT = " Once upon a time, a robot named Ünïcødé painted 🎨🖌️ 画家 in the rain.\n\nIt said: \"naïve café — ok?\"  Then   it   slept. ".repeat(4);

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
      const tokens = model.tokenize(TEXT, false) as Token[];
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
});
