import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { GgufValueType } from "../../models/gguf/types.js";
import { runCli, storiesModelPath, tempDir } from "../helpers/cli.js";
import { f32, ggufBytes, kv, kvString, kvU32, smallValidGguf } from "./ggufBytes.js";

const dir = tempDir("clawrl-inspect-");
const stories = storiesModelPath();

/** "label  value" lines of the text listing as a map. */
function fields(stdout: string): Map<string, string> {
  return new Map(
    stdout
      .trim()
      .split("\n")
      .map((l) => {
        const m = /^(\S+(?: \S+)*?)\s{2,}(.*)$/.exec(l);
        assert.ok(m, `unexpected line '${l}'`);
        return [m[1], m[2]] as [string, string];
      }),
  );
}

describe("clawrl inspect", () => {
  it("describes stories260K", () => {
    const r = runCli(["inspect", stories]);
    assert.equal(r.code, 0, r.stderr);
    const f = fields(r.stdout);
    assert.equal(f.get("size"), "1.13 MiB (1,185,376 bytes)");
    assert.equal(f.get("gguf version"), "3");
    assert.equal(f.get("architecture"), "llama");
    assert.equal(f.get("kind"), "model");
    assert.equal(f.get("parameters"), "292,800 (292.8K) in 48 tensors");
    assert.equal(f.get("tensor types"), "F32 x48");
    assert.equal(f.get("main type"), "F32");
    assert.equal(f.get("context length"), "2,048");
    assert.equal(f.get("embedding dim"), "64");
    assert.equal(f.get("layers"), "5");
    assert.equal(f.get("heads"), "8 (4 kv)");
    assert.equal(f.get("feed-forward"), "172");
    assert.equal(f.get("vocab size"), "512 (tokenizer llama)");
    assert.equal(f.get("chat template"), "no");
    assert.equal(f.get("LoRA adapter"), "no");
    assert.equal(f.get("trainer"), "supports llama");
  });

  it("prints the same facts as JSON with --json", () => {
    const r = runCli(["inspect", "--json", stories]);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.fileSize, fs.statSync(stories).size);
    assert.equal(j.ggufVersion, 3);
    assert.equal(j.architecture, "llama");
    assert.equal(j.parameterCount, 292_800);
    assert.equal(j.tensorCount, 48);
    assert.deepEqual(j.tensorTypes, [{ type: "F32", tensors: 48, parameters: 292_800 }]);
    assert.equal(j.mainType, "F32");
    assert.equal(j.contextLength, 2048);
    assert.equal(j.embeddingLength, 64);
    assert.equal(j.layers, 5);
    assert.equal(j.heads, 8);
    assert.equal(j.headsKv, 4);
    assert.equal(j.feedForwardLength, 172);
    assert.equal(j.vocabSize, 512);
    assert.equal(j.tokenizerModel, "llama");
    assert.equal(j.hasChatTemplate, false);
    assert.equal(j.lora, null);
    assert.equal(j.trainerSupported, true);
  });

  it("reports the main quant type, file type, chat template and an unsupported architecture", () => {
    const p = path.join(dir, "quant.gguf");
    fs.writeFileSync(
      p,
      ggufBytes({
        kvs: [
          kvString("general.architecture", "gemma"),
          kvU32("general.file_type", 15),
          kvString("tokenizer.chat_template", "{{ messages }}"),
          kvU32("gemma.context_length", 8192),
        ],
        tensors: [
          { name: "token_embd.weight", dims: [256, 4], type: 14 /* Q6_K */, offset: 0 }, // 210·4 = 840 bytes
          { name: "blk.0.attn_q.weight", dims: [256, 8], type: 12 /* Q4_K */, offset: 864 }, // 144·8 = 1152
          { name: "blk.0.attn_norm.weight", dims: [256], type: 0, offset: 2016 },
        ],
        data: Buffer.alloc(2016 + 1024),
      }),
    );
    const f = fields(runCli(["inspect", p]).stdout);
    assert.equal(f.get("tensor types"), "Q4_K x1, Q6_K x1, F32 x1");
    assert.equal(f.get("main type"), "Q4_K (file type Q4_K_M)");
    assert.equal(f.get("chat template"), "yes");
    assert.equal(f.get("context length"), "8,192");
    assert.equal(f.get("layers"), "-");
    assert.equal(f.get("trainer"), "does not support 'gemma' (supports llama, qwen2, qwen3)");
  });

  it("recognises a LoRA adapter with its architecture, alpha, rank and tensor count", () => {
    const p = path.join(dir, "adapter.gguf");
    const rank = 4;
    const pair = (base: string, inF: number, outF: number, at: number) => [
      { name: `${base}.lora_a`, dims: [inF, rank], type: 0, offset: at },
      { name: `${base}.lora_b`, dims: [rank, outF], type: 0, offset: at + inF * rank * 4 },
    ];
    const tensors = [...pair("blk.0.attn_q.weight", 64, 64, 0), ...pair("blk.0.attn_v.weight", 64, 32, 2048)];
    fs.writeFileSync(
      p,
      ggufBytes({
        kvs: [
          kvString("general.architecture", "qwen2"),
          kvString("general.type", "adapter"),
          kvString("adapter.type", "lora"),
          kv("adapter.lora.alpha", GgufValueType.FLOAT32, f32(16)),
        ],
        tensors,
        data: Buffer.alloc(2048 + 64 * rank * 4 + rank * 32 * 4),
      }),
    );
    const r = runCli(["inspect", p]);
    assert.equal(r.code, 0, r.stderr);
    const f = fields(r.stdout);
    assert.equal(f.get("kind"), "LoRA adapter");
    assert.equal(f.get("LoRA adapter"), "yes, for qwen2: alpha 16, rank 4, 4 tensors (2 matrices)");
    assert.equal(f.get("trainer"), "supports qwen2");
    const j = JSON.parse(runCli(["inspect", p, "--json"]).stdout);
    assert.deepEqual(j.lora, { architecture: "qwen2", alpha: 16, rank: 4, tensorCount: 4, adaptedMatrices: 2 });
    assert.equal(j.kind, "lora-adapter");
  });

  it("fails with one line and exit 1 on bad files", () => {
    const notGguf = path.join(dir, "text.gguf");
    fs.writeFileSync(notGguf, "just text\n");
    const truncated = path.join(dir, "truncated.gguf");
    fs.writeFileSync(truncated, smallValidGguf().subarray(0, 50));
    const cases: Array<[string, RegExp]> = [
      [notGguf, /not a GGUF file/],
      [truncated, /truncated/],
      [path.join(dir, "missing.gguf"), /no such file/],
    ];
    for (const [p, re] of cases) {
      const r = runCli(["inspect", p]);
      assert.equal(r.code, 1, p);
      assert.equal(r.stdout, "");
      const lines = r.stderr.trim().split("\n");
      assert.equal(lines.length, 1, r.stderr);
      assert.ok(lines[0].startsWith(`clawrl inspect: ${p}: `), lines[0]);
      assert.match(lines[0], re);
    }
  });

  it("requires exactly one FILE", () => {
    assert.equal(runCli(["inspect"]).code, 2);
    assert.equal(runCli(["inspect", "a", "b"]).code, 2);
  });
});
