/** `clawrl tiny-model` as a user runs it: deterministic bytes, validation with one-line errors. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { runCli, tempDir } from "../helpers/cli.js";

const dir = tempDir("clawrl-tiny-cli-");
const sha = (f: string) => createHash("sha256").update(fs.readFileSync(f)).digest("hex");

describe("clawrl tiny-model", () => {
  it("writes byte-identical files for the same arguments and different ones for another seed", () => {
    const a = path.join(dir, "a.gguf");
    const b = path.join(dir, "b.gguf");
    const c = path.join(dir, "c.gguf");
    for (const [out, seed] of [[a, "7"], [b, "7"], [c, "8"]] as const) {
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
