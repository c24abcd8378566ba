/** `clawrl tiny-model` as a user runs it: deterministic bytes, validation with one-line errors. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { archNumber, findTensor, readGguf } from "../../models/gguf/reader.js";
import { GgmlType } from "../../models/gguf/types.js";
import { runCli, tempDir } from "../helpers/cli.js";

const dir = tempDir("clawrl-tiny-cli-");
const sha = (f: string) => createHash("sha256").update(fs.readFileSync(f)).digest("hex");

describe("clawrl tiny-model", () => {
  it("writes byte-identical files for the same arguments and different ones for another seed", () => {
    const a = path.join(dir, "a.gguf");
    const b = path.join(dir, "b.gguf");
    const c = path.join(dir, "c.gguf");
    for (const [out, seed] of [
      [a, "7"],
      [b, "7"],
      [c, "8"],
    ] as const) {
      const r = runCli(["tiny-model", "--arch", "qwen2", "--out", out, "--seed", seed, "--type", "q8_0"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /qwen2 q8_0, 2 layers, dim 64, 4 heads \(2 kv\), ffn 128, vocab \d+, context 32768, \d+ bytes/);
    }
    assert.equal(sha(a), sha(b));
    assert.notEqual(sha(a), sha(c));
    assert.equal(fs.statSync(a).size, fs.statSync(c).size);
    assert.ok(fs.statSync(a).size < 5 * 1024 * 1024);
    assert.deepEqual(fs.readdirSync(dir).sort(), ["a.gguf", "b.gguf", "c.gguf"], "no temp files left");
  });

  it("--shape writes a real-shaped random model; same arguments give the same bytes, a catalog id names the same shape", () => {
    const a = path.join(dir, "shape-a.gguf");
    const b = path.join(dir, "shape-b.gguf");
    const c = path.join(dir, "shape-c.gguf");
    const runs: Array<[string, string, string]> = [
      [a, "smollm2-135m", "3"],
      [b, "smollm2-135m-instruct", "3"],
      [c, "smollm2-135m", "4"],
    ];
    for (const [out, shape, seed] of runs) {
      const r = runCli(["tiny-model", "--shape", shape, "--layers", "1", "--context", "4096", "--seed", seed, "--out", out]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        /smollm2-135m shape, llama q8_0, 1 layers, dim 576, 9 heads \(3 kv\) of 64, ffn 1536, vocab 49152, context 4096, tied output, \d+ bytes in [\d.]+ s\n$/,
      );
    }
    assert.equal(sha(a), sha(b));
    assert.notEqual(sha(a), sha(c));
    assert.equal(fs.statSync(a).size, fs.statSync(c).size);
    const g = readGguf(a);
    assert.equal(archNumber(g, "context_length"), 4096);
    assert.equal(archNumber(g, "block_count"), 1);
    assert.equal(findTensor(g, "token_embd.weight")?.type, GgmlType.Q8_0);
    assert.equal(findTensor(g, "output.weight"), undefined);
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.startsWith(".")),
      [],
      "no temp files left",
    );
  });

  it("--shape with q4_k names the matrices that fall back to q8_0", () => {
    const out = path.join(dir, "shape-q4k.gguf");
    const r = runCli(["tiny-model", "--shape", "smollm2-135m", "--layers", "1", "--type", "q4_k", "--out", out]);
    assert.equal(r.code, 0, r.stderr);
    // 576 (dim, and q = 9 heads × 64) is not a multiple of 256; 1536 (ffn_down's rows) is.
    assert.match(
      r.stdout,
      /; q8_0 instead of q4_k for 7 matrices whose rows are not a multiple of 256 \(token_embd\.weight, blk\.\*\.attn_q\.weight, blk\.\*\.attn_k\.weight, blk\.\*\.attn_v\.weight, blk\.\*\.attn_output\.weight, blk\.\*\.ffn_gate\.weight, blk\.\*\.ffn_up\.weight\)\n$/,
    );
    const g = readGguf(out);
    assert.equal(findTensor(g, "blk.0.ffn_down.weight")?.type, GgmlType.Q4_K);
    assert.equal(findTensor(g, "blk.0.ffn_up.weight")?.type, GgmlType.Q8_0);
  });

  const bad: Array<[string[], RegExp]> = [
    [["--out", "x.gguf"], /--arch is required/],
    [["--arch", "gpt9", "--out", "x.gguf"], /--arch must be one of llama, qwen2, qwen3, got 'gpt9'/],
    [["--arch", "llama"], /--out is required/],
    [["--arch", "llama", "--out", "x.gguf", "--type", "q5_k"], /--type must be one of f32, f16, q8_0, q4_k, got 'q5_k'/],
    [["--arch", "llama", "--out", "x.gguf", "--layers", "0"], /--layers must be between 1 and 16, got 0/],
    [["--arch", "llama", "--out", "x.gguf", "--seed=-1"], /--seed must be between 0 and 4294967295, got -1/],
    [["--arch", "llama", "--out", "x.gguf", "--dim", "abc"], /--dim must be an integer, got 'abc'/],
    [["--arch", "llama", "--out", "x.gguf", "--dim", "100"], /--dim must be a multiple of 8/],
    [["--arch", "llama", "--out", "x.gguf", "--type", "q4_k", "--dim", "128"], /--dim must be a multiple of 256 for q4_k/],
    [["--arch", "llama", "--out", path.join(dir, "missing", "x.gguf")], /--out: directory .* does not exist/],
    [["--arch", "llama", "--out", "x.gguf", "--context", "10"], /--context must be between 64 and 1048576, got 10/],
    [
      ["--shape", "gpt-5", "--out", "x.gguf"],
      /--shape must be one of smollm2-135m, smollm2-360m, qwen2\.5-0\.5b, qwen2\.5-1\.5b, qwen3-0\.6b, qwen3-1\.7b, qwen3-4b, llama-3\.2-1b, llama-3\.2-3b, got 'gpt-5'/,
    ],
    [["--shape", "qwen3-0.6b"], /--out is required/],
    [["--shape", "qwen3-0.6b", "--arch", "qwen3", "--out", "x.gguf"], /--arch and --shape exclude each other/],
    [["--shape", "qwen3-0.6b", "--dim", "64", "--out", "x.gguf"], /--dim cannot be used with --shape/],
    [["--shape", "qwen3-0.6b", "--type", "f32", "--out", "x.gguf"], /--type must be one of f16, q8_0, q4_k, got 'f32'/],
    [["--shape", "qwen3-0.6b", "--layers", "29", "--out", "x.gguf"], /--layers must be between 1 and 28, got 29/],
    [["--shape", "qwen3-0.6b", "--layers", "0", "--out", "x.gguf"], /--layers must be between 1 and 28, got 0/],
    [["--shape", "qwen3-0.6b", "--context", "2000000", "--out", "x.gguf"], /--context must be between 64 and 1048576, got 2000000/],
    [["--shape", "qwen3-0.6b", "--out", path.join(dir, "missing", "x.gguf")], /--out: directory .* does not exist/],
  ];
  it("rejects bad arguments with a one-line error and no file", () => {
    for (const [args, re] of bad) {
      const r = runCli(["tiny-model", ...args], { CLAWRL_HOME: dir });
      assert.notEqual(r.code, 0, `${args.join(" ")} succeeded`);
      assert.match(r.stderr, re, args.join(" "));
      assert.equal(r.stderr.trim().split("\n").length, 1, `more than one line: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /, "stack trace");
    }
    assert.ok(!fs.existsSync("x.gguf"));
  });
});
