import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, describe, test } from "node:test";
import { runCli, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

let model: string;
let dir: string;
let data: string;

before(async () => {
  model = await tinyModel({ arch: "qwen2", layers: 1, dim: 32 });
  dir = tempDir();
  data = path.join(dir, "data.jsonl");
  const rows = [
    { messages: [{ role: "user", content: "Hi" }], response: "Hello.", reward: 1, hints: ["Be warm.", "Use one word."] },
    { messages: [{ role: "user", content: "Hi" }], response: "What?", reward: -1, hint: "Greet back." },
    { prompt_tokens: [1, 2, 3], response_tokens: [4, 5], logprobs: [-3.1, -2.2], reward: 1 },
  ];
  fs.writeFileSync(data, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
});

describe("clawrl train", () => {
  for (const method of ["binary", "opd", "combined", "topk"] as const) {
    test(`${method}: trains end to end and writes the adapter, optimizer state and metrics`, () => {
      const out = path.join(dir, method);
      const r = runCli(
        [
          "train",
          "--model",
          model,
          "--data",
          data,
          "--out",
          out,
          "--method",
          method,
          "--steps",
          "2",
          "--rank",
          "2",
          "--alpha",
          "4",
          "--lr",
          "0.01",
          "--backend",
          "wasm",
        ],
        {},
        300_000,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /trainer backend: wasm/);
      assert.match(r.stdout, /step 1\/2 {2}loss -?\d+\.\d{4} {2}grad-norm [\d.]+.* tokens\/s \d+/);
      assert.match(r.stdout, /step 2\/2 /);
      const metrics = JSON.parse(fs.readFileSync(path.join(out, "metrics.json"), "utf8"));
      assert.equal(metrics.method, method);
      assert.equal(metrics.totalSteps, 2);
      assert.equal(metrics.rank, 2);
      assert.equal(metrics.model.arch, "qwen2");
      // The written adapter is a llama.cpp LoRA GGUF for this architecture.
      const info = runCli(["inspect", path.join(out, "adapter.gguf"), "--json"]);
      assert.equal(info.code, 0, info.stderr);
      const s = JSON.parse(info.stdout);
      assert.equal(s.kind, "lora-adapter");
      assert.equal(s.architecture, "qwen2");
      assert.ok(fs.statSync(path.join(out, "optimizer.bin")).size > 0);
      assert.deepEqual(fs.readdirSync(out).sort(), ["adapter.gguf", "metrics.json", "optimizer.bin"], "no temp files left");
    });
  }

  test("--resume continues the step count", () => {
    const out = path.join(dir, "resumed");
    const r = runCli(
      ["train", "--model", model, "--data", data, "--out", out, "--resume", path.join(dir, "combined"), "--steps", "1", "--lr", "0.01"],
      {},
      300_000,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /resumed from .*combined at step 2/);
    assert.equal(JSON.parse(fs.readFileSync(path.join(out, "metrics.json"), "utf8")).totalSteps, 3);
  });

  test("bad arguments and bad data lines get one-line errors", () => {
    const bad = path.join(dir, "bad.jsonl");
    fs.writeFileSync(bad, `${JSON.stringify({ messages: [{ role: "user", content: "x" }], response: "y" })}\n{"messages": [], "response": "z"}\n`);
    const cases: Array<[string[], RegExp, number]> = [
      [["--data", data, "--out", dir], /--model is required/, 2],
      [["--model", model, "--data", data, "--out", dir, "--method", "sft"], /--method must be one of binary, opd, combined, topk, got 'sft'/, 2],
      [["--model", model, "--data", data, "--out", dir, "--steps", "0"], /--steps must be between 1 and/, 2],
      [["--model", model, "--data", data, "--out", dir, "--lr", "fast"], /--lr must be a number, got 'fast'/, 2],
      [["--model", model, "--data", path.join(dir, "none.jsonl"), "--out", dir], /--data .*none\.jsonl: no such file/, 1],
      [["--model", model, "--data", bad, "--out", path.join(dir, "never")], /bad\.jsonl:2: invalid sample: messages: Too small/, 1],
    ];
    for (const [args, re, code] of cases) {
      const r = runCli(["train", ...args], {}, 300_000);
      assert.equal(r.code, code, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, re);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    }
    assert.equal(fs.existsSync(path.join(dir, "never")), false);
  });
});
